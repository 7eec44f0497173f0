# cache tier, eu-west        <- a comment
cache-a        1  eu-west-1a
cache-b        2  eu-west-1b   # twice the share of cache-a
10.0.0.7:11211 1
draining-node  0               # a member without tokens: gets no keys
caf%C3%A9%20au%20lait 1        # id "café au lait"
