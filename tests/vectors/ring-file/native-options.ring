%%ring-file 1
%%placement native
%%hasher xxh64
%%seed 12345
%%tokens-per-weight 40
%%revision 77
%%fingerprint 0xe619e050c3fb5f45
shard-01 3
shard-02 1 rack%201
shard-03 2 rack%202
shard-04 5
