package permission

import (
	"mvdan.cc/sh/v3/syntax"

	"github.com/ccrun/ccrun/shellcmd"
)

// inside is one reading of a request: what the gate's steps derive from it
// (the parse of its command, the commands inside it, its read-only
// verdict, its class, its warnings), each derived on first use and then
// kept, so that a decision reads the request once for all its steps. It
// lives for one decision only: nothing in it outlives the request, and
// nothing that the file system says (symbolic links, the working
// directory) is kept in it.
type inside struct {
	req *Request

	fileDone bool
	file     *syntax.File
	fileOK   bool

	segsDone bool
	segs     []shellcmd.Segment

	verdictDone bool
	verdict     shellcmd.Classification

	warnDone bool
	warnings []string

	class effective // effectiveClass's answer for class.pol (nil: none yet)
}

// effective is effectiveClass's answer for one policy.
type effective struct {
	pol        *Policy
	c          Class
	ro         bool
	why        string
	kernelOnly bool
}

// commandFile is commandFile(in.req), kept.
func (in *inside) commandFile() (*syntax.File, bool) {
	if !in.fileDone {
		in.fileDone = true
		in.file, in.fileOK = commandFile(in.req)
	}
	return in.file, in.fileOK
}

// segments returns the commands inside the request's shell command; ok is
// false when it has none that parses.
func (in *inside) segments() ([]shellcmd.Segment, bool) {
	f, ok := in.commandFile()
	if ok && !in.segsDone {
		in.segsDone = true
		in.segs = shellcmd.Segments(f)
	}
	return in.segs, ok
}

// classify is classify(in.req, f) for the request's own parse f.
func (in *inside) classify(f *syntax.File) shellcmd.Classification {
	if !in.verdictDone {
		in.verdictDone = true
		in.verdict = classify(in.req, f)
	}
	return in.verdict
}

// Warnings is Warnings(in.req).
func (in *inside) Warnings() []string {
	if !in.warnDone {
		in.warnDone = true
		if isShell(in.req) {
			f, _ := in.commandFile()
			src := ""
			if in.req.Command != nil {
				src = in.req.Command.Source
			}
			var segs []shellcmd.Segment
			if f != nil {
				segs, _ = in.segments()
			}
			in.warnings = shellcmd.WarningsWith(f, src, segs)
		}
	}
	return in.warnings
}
