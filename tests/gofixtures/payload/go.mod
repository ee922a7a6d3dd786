module bindtrace.test/payload

go 1.21
