package capabilities

// problemKind classes a problem, for the messages of the manifest.
type problemKind int

const (
	otherProblem problemKind = iota
	typeProblem
	enumProblem
	patternProblem
	minLengthProblem
	requiredProblem      // props: the missing fields
	additionalProblem    // props: the fields not allowed
	falseProblem         // the schema is false: nothing is allowed here
	propertyNamesProblem // prop: the name
)

// A problem is one reason a value does not match a schema.
type problem struct {
	ptr   string // JSON pointer of the value in the instance
	kind  problemKind
	msg   string
	got   string   // patternProblem: the string
	props []string // requiredProblem, additionalProblem
	prop  string   // propertyNamesProblem
}
