package main

// Version is set at link time (-ldflags "-X main.Version=...").
var Version = "0.1.0-dev"
