// Choice: the output is exactly one of a list of strings.

package grammar

import "unicode/utf8"

// Choice compiles a constraint whose matches are exactly the options. It
// refuses an empty list and options that are not valid UTF-8.
func Choice(options []string) (*Grammar, error) {
	const src = "choice"
	if len(options) == 0 {
		return nil, newError(src, "", -1, ErrSyntax, "no options to choose from")
	}
	total := 0
	alts := make([]*expr, len(options))
	for i, o := range options {
		total += len(o)
		if total > MaxSource {
			return nil, newError(src, "", -1, ErrTooLarge, "options of more than %d bytes in all", MaxSource)
		}
		if !utf8.ValidString(o) {
			return nil, newError(src, "", -1, ErrSyntax, "option %d is not valid UTF-8", i)
		}
		alts[i] = literal(o)
	}
	return compile(src, "the choices", "", []ruleDef{{name: "choice", body: alt(alts...), off: -1}}, 0)
}
