// The Go kit's tests that need PostgreSQL. A module of its own, so that the kit stays stdlib-only:
// the driver is lib/pq from Debian's golang-github-lib-pq-dev, found where that package installs it;
// the platform it tests against is started by the harness of the module platformtests.
module github.com/earshot/earshot/kits/go/pgtest

go 1.19

require (
	github.com/earshot/earshot/kits/go v0.0.0
	github.com/earshot/earshot/kits/go/platformtests v0.0.0
	github.com/lib/pq v1.10.7
)

replace github.com/earshot/earshot/kits/go => ../

replace github.com/earshot/earshot/kits/go/platformtests => ../platformtests

replace github.com/lib/pq => /usr/share/gocode/src/github.com/lib/pq
