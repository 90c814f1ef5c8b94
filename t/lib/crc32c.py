# crc32c.py -- the CRC-32C (Castagnoli, reflected 0x82f63b78) the tests'
# Python scripts check siftpd's against, by a table.

TABLE = []

for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82f63b78 if c & 1 else c >> 1
    TABLE.append(c)


def crc32c(data, crc=0):
    crc ^= 0xffffffff
    for b in data:
        crc = TABLE[(crc ^ b) & 0xff] ^ (crc >> 8)
    return crc ^ 0xffffffff
