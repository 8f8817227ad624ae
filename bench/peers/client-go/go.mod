module braid.bench/client-go

go 1.22
