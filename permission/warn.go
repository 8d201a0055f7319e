package permission

// Warnings returns short notes for the person asked about a shell command
// of a destructive form (rm -rf, git reset --hard, git push --force, DROP
// TABLE, sudo, curl … | sh…), found anywhere in the command; see shellcmd.Warnings. They change no decision
// but one: in trust mode a command that carries one is asked. Nil for
// calls that are not shell commands.
func Warnings(req *Request) []string {
	return (&inside{req: req}).Warnings()
}
