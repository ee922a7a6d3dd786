module bindtrace.test/capverify

go 1.23.0

require golang.org/x/net v0.38.0

require golang.org/x/text v0.23.0 // indirect
