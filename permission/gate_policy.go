package permission

// Placeholder for the policy layer (issue 6), replaced when it lands.

// Policy is the policy layer in front of the allowlists.
type Policy struct{}

// Finding is a dangerous path a call touches.
type Finding struct{ Path string }

func (f Finding) String() string { return f.Path }

func (p *Policy) InScope(req *Request) (bool, string)    { return true, "" }
func (p *Policy) DenyRule(req *Request) (string, bool)   { return "", false }
func (p *Policy) Restricted(req *Request) (string, bool) { return "", false }
func (p *Policy) Warnings(req *Request) []string         { return nil }
func (p *Policy) Dangerous(req *Request) []Finding       { return nil }
func (p *Policy) Decide(req *Request) (Verdict, Layer, string, string) {
	if req.Class == ClassRead || req.Class == ClassInternal {
		return Allow, LayerMode, "", "default mode allows reads"
	}
	return AskUser, LayerMode, "", "default mode asks before " + string(req.Class)
}
