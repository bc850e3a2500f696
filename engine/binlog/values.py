"""Value encodings shared by row images, user variables and JSON opaque values."""

from __future__ import annotations

from decimal import Decimal

from . import primitives as p

_DIG_PER_DEC = 9
# bytes needed for 0..9 leftover decimal digits
_DIG_BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


def decimal_size(precision: int, scale: int) -> int:
    """Bytes of MySQL's binary DECIMAL(precision, scale)."""
    integral = precision - scale
    return (
        (integral // _DIG_PER_DEC) * 4
        + _DIG_BYTES[integral % _DIG_PER_DEC]
        + (scale // _DIG_PER_DEC) * 4
        + _DIG_BYTES[scale % _DIG_PER_DEC]
    )


def decode_decimal(buf: bytes | memoryview, pos: int, precision: int, scale: int) -> tuple[Decimal, int]:
    """MySQL's binary DECIMAL: base-1e9 groups, big-endian, sign in the top bit (negatives inverted)."""
    size = decimal_size(precision, scale)
    p.need(buf, pos, size, "a DECIMAL value")
    raw = bytearray(buf[pos : pos + size])
    negative = not raw[0] & 0x80
    raw[0] ^= 0x80
    if negative:
        raw = bytearray(b ^ 0xFF for b in raw)
    integral = precision - scale
    digits: list[str] = []
    offset = 0
    lead = _DIG_BYTES[integral % _DIG_PER_DEC]
    if lead:
        digits.append(str(int.from_bytes(raw[0:lead], "big")))
        offset = lead
    for _ in range(integral // _DIG_PER_DEC):
        digits.append(f"{int.from_bytes(raw[offset : offset + 4], 'big'):09d}")
        offset += 4
    int_part = "".join(digits).lstrip("0") or "0"
    frac: list[str] = []
    for _ in range(scale // _DIG_PER_DEC):
        frac.append(f"{int.from_bytes(raw[offset : offset + 4], 'big'):09d}")
        offset += 4
    tail = scale % _DIG_PER_DEC
    if tail:
        frac.append(f"{int.from_bytes(raw[offset : offset + _DIG_BYTES[tail]], 'big'):0{tail}d}")
    text = int_part + ("." + "".join(frac) if scale else "")
    return Decimal(("-" if negative else "") + text), pos + size
