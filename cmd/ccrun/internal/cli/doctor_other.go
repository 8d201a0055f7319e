//go:build !linux

package cli

func kernelRelease() string { return "" }

func cgroupVersion() string { return "none" }

func userNamespaces() userNSReport { return userNSReport{Detail: "Linux only"} }
