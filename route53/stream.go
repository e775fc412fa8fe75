package route53

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The files are read as a stream of JSON tokens: a record set (a health check, a
// CIDR block) is decoded on its own once its array is reached, so reading holds one
// element's text at a time besides what it built, and a file that is not JSON, or
// not JSON of the expected shape, is refused at the first token that shows it,
// without reading the rest.

// openDoc reads the first token of a document: it reports whether the document
// is an array ('[') rather than an object ('{'); anything else is an error.
func openDoc(d *json.Decoder) (array bool, err error) {
	tok, err := d.Token()
	if err == io.EOF {
		return false, errors.New("empty file, expected a JSON object or array")
	}
	if err != nil {
		return false, jsonErr(err)
	}
	switch tok {
	case json.Delim('['):
		return true, nil
	case json.Delim('{'):
		return false, nil
	}
	return false, fmt.Errorf("expected a JSON object or array, found %s", describe(tok))
}

// closeDoc checks that nothing but white space follows the document.
func closeDoc(d *json.Decoder) error {
	if _, err := d.Token(); err != io.EOF {
		if err != nil {
			return jsonErr(err)
		}
		return fmt.Errorf("data after the JSON document at byte %d", d.InputOffset())
	}
	return nil
}

// openArray reads the start of a member's array value: false for null.
func openArray(d *json.Decoder, key string) (bool, error) {
	tok, err := d.Token()
	if err != nil {
		return false, jsonErr(err)
	}
	switch tok {
	case json.Delim('['):
		return true, nil
	case nil:
		return false, nil
	}
	return false, fmt.Errorf("%s: expected an array, found %s", key, describe(tok))
}

// elemError is an error of an element's handler, passed through eachElem as is.
type elemError struct{ err error }

func (e elemError) Error() string { return e.err.Error() }

// eachElem passes each element of the array whose '[' was just read to f, as its
// text, one at a time, then reads the closing ']'. An error of f comes back
// wrapped in elemError.
func eachElem(d *json.Decoder, f func(json.RawMessage) error) error {
	for d.More() {
		var m json.RawMessage
		if err := decode(d, &m); err != nil {
			return err
		}
		if err := f(m); err != nil {
			return elemError{err}
		}
	}
	if _, err := d.Token(); err != nil {
		return jsonErr(err)
	}
	return nil
}

// decode decodes the next value of d into v. A syntax error names its byte in the
// whole document: encoding/json's Decoder counts it from an earlier point, so the
// value is scanned again, from its start, to find it.
func decode(d *json.Decoder, v any) error {
	err := d.Decode(v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return jsonErr(err)
	}
	start := d.InputOffset() // the value's start: a failed Decode leaves the decoder there
	var m json.RawMessage
	if err := json.NewDecoder(d.Buffered()).Decode(&m); errors.As(err, &se) {
		return fmt.Errorf("malformed JSON at byte %d: %w", start+se.Offset, err)
	}
	return jsonErr(err)
}

// eachMember passes the key of each member of the object whose '{' was just read to
// f, which reads the value (with d.Decode, openArray and eachElem, or skipValue),
// then reads the closing '}'.
func eachMember(d *json.Decoder, f func(key string) error) error {
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return jsonErr(err)
		}
		key, _ := tok.(string)
		if err := f(key); err != nil {
			return err
		}
	}
	if _, err := d.Token(); err != nil {
		return jsonErr(err)
	}
	return nil
}

// skipValue reads past one value token by token, holding no more than a token.
func skipValue(d *json.Decoder) error {
	depth := 0
	for {
		tok, err := d.Token()
		if err != nil {
			return jsonErr(err)
		}
		switch tok {
		case json.Delim('['), json.Delim('{'):
			depth++
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// is reports whether key names field, as encoding/json matches them (ignoring case).
func is(key, field string) bool { return strings.EqualFold(key, field) }

// describe names a token for an error message.
func describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		return fmt.Sprintf("'%s'", v)
	case string:
		return "a string"
	case nil:
		return "null"
	case bool:
		return "a boolean"
	}
	return "a number"
}

// decodeStrict decodes m into v, refusing fields v does not have.
func decodeStrict(m json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(m))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// readDoc reads one whole JSON document from r, which the caller bounds (readFile
// reads through the file's size limit): a bare array into list, anything else into
// doc. It reports which it was. For the small documents of Traffic Flow, read whole.
func readDoc(r io.Reader, list, doc any) (array bool, err error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return false, err
	}
	t := bytes.TrimSpace(raw)
	array = len(t) > 0 && t[0] == '['
	if array {
		err = json.Unmarshal(t, list)
	} else {
		err = json.Unmarshal(t, doc)
	}
	return array, jsonErr(err)
}
