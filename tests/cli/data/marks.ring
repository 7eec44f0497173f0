# small.members with cache-b marked down (availability, docs/ring-file.md):
# its keys go to the next available member of each key's walk.
%%panic-threshold 60
%%down cache-b
cache-a   1   eu-west-1a
cache-b   2   eu-west-1b
cache-c   1   eu-west-1c
cache-d   0
cache-e   1   eu-west-1a
