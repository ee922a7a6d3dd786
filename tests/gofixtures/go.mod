module bindtrace.test/gofixtures

go 1.21

require bindtrace.test/payload v0.0.0

// A local replacement, so that buildinfo carries a "dep" and a "=>" line without any download.
replace bindtrace.test/payload => ./payload
