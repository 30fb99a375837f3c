package main

import (
	"os"
	"os/user"
)

// trigger names the operator for a run's record: "cli:<user>".
func trigger() string { return "cli:" + userName() }

// userName is the operator's login name, "unknown" if none can be found.
func userName() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	return name
}
