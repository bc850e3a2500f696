"""The receiver (a replica's IO thread): fetches a source's binary log over the replication
protocol and writes it into relay logs that the appliers read."""
