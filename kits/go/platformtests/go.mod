// The Go kit's tests against a running Earshot platform, and the harness that starts one
// (platformtest, which pgtest uses too). A module of its own, so that the kit ships no test needs;
// it uses the kit through its exported API only.
module github.com/earshot/earshot/kits/go/platformtests

go 1.19

require github.com/earshot/earshot/kits/go v0.0.0

replace github.com/earshot/earshot/kits/go => ../
