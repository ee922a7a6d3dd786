module bulk

go 1.21
