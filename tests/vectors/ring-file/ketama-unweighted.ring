%%placement ketama-unweighted
mc-1 1
mc-2 1
mc-3 1
mc-4 0
