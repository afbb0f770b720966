module github.com/earshot/earshot/kits/go

go 1.19
