package cli

// This file holds -version: what the binary knows of the source it was
// built from.

import (
	"runtime"
	"runtime/debug"
)

// Version is the line -version prints: the command's name, the module's
// version, the commit it was built from and whether the tree had changes
// (when the go command stamped them), and the Go toolchain.
//
//	generate: example.org/minigpt v0.0.0-20261201104040-c3308e744c04+dirty, commit c3308e744c04 of 2026-12-01T10:40:40Z (modified), go1.26.8 linux/amd64
//
// go build and go install stamp the commit in a Git checkout; go run, a
// tree without Git and -buildvcs=false do not, and a build from the
// module's own tree has the version "(devel)".
func Version(name string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return versionLine(name, bi)
}

// versionLine is Version for the build information bi (nil when the
// binary has none).
func versionLine(name string, bi *debug.BuildInfo) string {
	goVersion := runtime.Version()
	module, version := "example.org/minigpt", "(devel)"
	settings := map[string]string{}
	if bi != nil {
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		if bi.Main.Path != "" {
			module = bi.Main.Path
		}
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
	}
	line := name + ": " + module + " " + version
	if rev := settings["vcs.revision"]; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		line += ", commit " + rev
		if t := settings["vcs.time"]; t != "" {
			line += " of " + t
		}
		switch settings["vcs.modified"] {
		case "true":
			line += " (modified)"
		case "false":
			line += " (unmodified)"
		}
	}
	return line + ", " + goVersion + " " + runtime.GOOS + "/" + runtime.GOARCH
}
