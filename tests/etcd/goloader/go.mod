module chring-etcd-goloader

go 1.19

require chring v0.0.0

replace chring => ../../../bindings/go
