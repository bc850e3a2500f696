"""Spark for the work that splits across cores or machines: decoding row images, computing writesets
and analysing the dependency graph of whole relay logs.

Importing this package (or its modules) starts nothing: the JVM starts on the first
`session.spark_session()` call, so the rest of relaydeck never pays for Spark it does not use.
"""
