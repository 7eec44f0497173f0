module chring

go 1.19
