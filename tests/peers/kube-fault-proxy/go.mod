module headroom.test/kube-fault-proxy

go 1.26.0
