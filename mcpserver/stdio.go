package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLine bounds one message on stdio: a call's arguments are at most 64 MiB.
const maxLine = 80 << 20

// StdioTransport is the stdio transport of `ccrun mcp`: MCP over in and out,
// one message per line (as the specification frames stdio). A line that is
// not a JSON-RPC 2.0 message — not JSON, not an object, another version —
// is answered with a JSON-RPC error (parse error, invalid request) and
// dropped, and the connection goes on: a client's malformed line does not
// end the session, as it would with the SDK's stream decoder.
func StdioTransport(in io.Reader, out io.Writer) mcp.Transport {
	w := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	go filterLines(in, pw, w)
	return &mcp.IOTransport{Reader: pr, Writer: w}
}

// lockedWriter serializes writes: the SDK's messages and the errors the
// filter writes never interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error {
	if c, ok := l.w.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// filterLines copies the JSON-RPC messages of in to pw, one per line, and
// answers the rest on out.
func filterLines(in io.Reader, pw *io.PipeWriter, out io.Writer) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := readLine(r)
		if len(bytes.TrimSpace(line)) > 0 {
			if msg, ok := checkMessage(line); ok {
				if _, werr := pw.Write(append(line, '\n')); werr != nil {
					return
				}
			} else if msg != nil {
				_, _ = out.Write(append(msg, '\n'))
			}
		}
		if err != nil {
			pw.CloseWithError(err)
			return
		}
	}
}

// readLine reads one line without its newline; past maxLine the rest of
// the line is dropped and what was read is returned (it fails to parse).
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) <= maxLine {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), err
	}
}

// checkMessage reports whether line is a JSON-RPC 2.0 message (or a batch);
// when it is not, msg is the error to answer with (nil for a response,
// which gets no answer).
func checkMessage(line []byte) (msg []byte, ok bool) {
	trim := bytes.TrimSpace(line)
	if !json.Valid(trim) {
		return rpcError(nil, -32700, "parse error: the line is not JSON (one message per line)"), false
	}
	if trim[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(trim, &batch) != nil || len(batch) == 0 {
			return rpcError(nil, -32600, "invalid request: an empty or malformed batch"), false
		}
		for _, m := range batch {
			if msg, ok := checkMessage(m); !ok {
				if msg == nil {
					msg = rpcError(nil, -32600, "invalid request: a batch of something else than JSON-RPC 2.0 messages")
				}
				return msg, false
			}
			if bytes.TrimSpace(m)[0] == '[' {
				return rpcError(nil, -32600, "invalid request: a batch inside a batch"), false
			}
		}
		return nil, true // the SDK answers each, or refuses batches on newer protocols
	}
	var m struct {
		Version string           `json:"jsonrpc"`
		ID      *json.RawMessage `json:"id"`
		Method  *string          `json:"method"`
	}
	if trim[0] != '{' || json.Unmarshal(trim, &m) != nil {
		return rpcError(nil, -32600, "invalid request: a JSON-RPC message is an object"), false
	}
	if m.Version != "2.0" {
		if m.Method == nil {
			return nil, false
		}
		return rpcError(m.ID, -32600, `invalid request: "jsonrpc" must be "2.0"`), false
	}
	return nil, true
}

func rpcError(id *json.RawMessage, code int, message string) []byte {
	e := struct {
		Version string           `json:"jsonrpc"`
		ID      *json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{Version: "2.0", ID: id}
	e.Error.Code, e.Error.Message = code, message
	b, _ := json.Marshal(e)
	return b
}
