module rtcheck.local/peers/go-gorilla

go 1.19

require github.com/gorilla/websocket v1.5.0

// Debian's golang-github-gorilla-websocket-dev (1.5.0): built offline, nothing downloaded.
replace github.com/gorilla/websocket => /usr/share/gocode/src/github.com/gorilla/websocket
