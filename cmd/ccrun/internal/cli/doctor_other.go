//go:build !linux && !ccrunfront

package main

func kernelRelease() string { return "" }

func cgroupVersion() string { return "none" }

func userNamespaces() userNSReport { return userNSReport{Detail: "Linux only"} }
