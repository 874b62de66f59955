// JSON Schema's bounds on numbers: minimum, maximum and their exclusive
// forms, for integers and for numbers, as the numerals they admit.

package grammar

import (
	"math"
	"math/big"
	"strconv"
	"strings"
)

// maxInteger is the largest integer a schema's output writes: 16 digits,
// as integer() allows, so that every one fits a float64's mantissa
// closely enough for readers.
const maxInteger = 1e16 - 1

// boundKeywords are the bounds a schema may give a number.
var boundKeywords = []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}

// firstBound returns the first bound keyword's value in s, or nil.
func firstBound(s *jvalue) *jvalue {
	for _, kw := range boundKeywords {
		if v := s.get(kw); v != nil {
			return v
		}
	}
	return nil
}

// intRange matches exactly the integers in [lo, hi], written as JSON
// writes them: no leading zeros, no "-0".
func intRange(lo, hi int64) *expr {
	var alts []*expr
	if lo < 0 {
		alts = append(alts, concat(char('-'), natRange(max(1, -hi), -lo)))
	}
	if hi >= 0 {
		alts = append(alts, natRange(max(0, lo), hi))
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return alt(alts...)
}

// natRange matches the decimal numerals of [a, b], 0 <= a <= b: for each
// length of numeral, the range of that length, digit by digit.
func natRange(a, b int64) *expr {
	var alts []*expr
	for L := len(strconv.FormatInt(a, 10)); L <= len(strconv.FormatInt(b, 10)); L++ {
		lo, hi := int64(math.Pow10(L-1)), int64(math.Pow10(L))-1
		if L == 1 {
			lo = 0
		}
		lo, hi = max(lo, a), min(hi, b)
		alts = append(alts, digitsRange(strconv.FormatInt(lo, 10), strconv.FormatInt(hi, 10)))
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return alt(alts...)
}

// digitsRange matches the strings of len(s) digits from s to t (s <= t,
// of one length), leading zeros allowed: the first digit fixed at s's,
// strictly between, or fixed at t's, and the rest recursively.
func digitsRange(s, t string) *expr {
	switch {
	case s == t:
		return literal(s)
	case strings.Trim(s, "0") == "" && strings.Trim(t, "9") == "":
		return repeat(digit, len(s), len(s)) // every string of the length: no branching
	case len(s) == 1:
		return class(runeSet{{rune(s[0]), rune(t[0])}})
	case s[0] == t[0]:
		return concat(char(rune(s[0])), digitsRange(s[1:], t[1:]))
	}
	n := len(s) - 1
	alts := []*expr{concat(char(rune(s[0])), digitsRange(s[1:], strings.Repeat("9", n)))}
	if t[0]-s[0] > 1 {
		alts = append(alts, concat(class(runeSet{{rune(s[0] + 1), rune(t[0] - 1)}}), repeat(digit, n, n)))
	}
	alts = append(alts, concat(char(rune(t[0])), digitsRange(strings.Repeat("0", n), t[1:])))
	return alt(alts...)
}

// numeric compiles a number or (integer) an integer, held to s's
// bounds if it has any.
func (c *jsonCompiler) numeric(s *jvalue, integer bool) (*expr, error) {
	switch {
	case firstBound(s) == nil && integer:
		return ref(c.once("integer", c.integer)), nil
	case firstBound(s) == nil:
		return ref(c.once("number", c.number)), nil
	}
	scale, limit, what := unitsPerOne, maxUnits, "number of at most 16 digits after the point"
	if integer {
		scale, limit, what = big.NewInt(1), big.NewInt(maxInteger), "integer"
	}
	lo, hi, err := c.boundRange(s, scale, limit)
	if err != nil {
		return nil, err
	}
	if lo.Cmp(hi) > 0 {
		return nil, c.fail(s.off, ErrSyntax, "no %s lies within the bounds", what)
	}
	if integer {
		return intRange(lo.Int64(), hi.Int64()), nil
	}
	return numRange(lo, hi), nil
}

// A bounded number is written without an exponent and with at most 16
// digits after the point, so it is a whole count of units of 10^-16, and
// at most maxUnits of them: 16 digits before the point, as integer()
// allows.
var (
	unitsPerOne = new(big.Int).Exp(big.NewInt(10), big.NewInt(16), nil)
	maxUnits    = new(big.Int).Sub(new(big.Int).Mul(unitsPerOne, unitsPerOne), big.NewInt(1))
)

// boundRange reads s's bounds as the closed range [lo, hi] of the whole
// numbers of 1/scale (within ±limit) that lie within them, each bound
// read exactly and rounded inwards; lo > hi when none does.
func (c *jsonCompiler) boundRange(s *jvalue, scale, limit *big.Int) (lo, hi *big.Int, err error) {
	lo, hi = new(big.Int).Neg(limit), new(big.Int).Set(limit)
	for _, kw := range boundKeywords {
		v := s.get(kw)
		if v == nil {
			continue
		}
		if v.kind != 'n' {
			return nil, nil, c.fail(v.off, ErrSyntax, "%s must be a number", kw)
		}
		if _, err := strconv.ParseFloat(string(v.raw), 64); err != nil { // 1e400, say: refused, not taken for infinity
			return nil, nil, c.fail(v.off, ErrSyntax, "%s %s is not a number this engine reads", kw, v.raw)
		}
		u := new(big.Rat).Mul(exactBound(string(v.raw)), new(big.Rat).SetInt(scale))
		var n *big.Int
		switch kw {
		case "minimum":
			n = ceilRat(u)
		case "exclusiveMinimum":
			n = floorRat(u)
			n.Add(n, big.NewInt(1))
		case "maximum":
			n = floorRat(u)
		case "exclusiveMaximum":
			n = ceilRat(u)
			n.Sub(n, big.NewInt(1))
		}
		if strings.HasPrefix(kw, "exclusiveMin") || kw == "minimum" {
			if n.Cmp(lo) > 0 {
				lo = n
			}
		} else if n.Cmp(hi) < 0 {
			hi = n
		}
	}
	return lo, hi, nil
}

// exactBound returns the value of raw, a JSON number, exactly, except
// that one whose exponent is so far from zero that big.Rat would build a
// needlessly huge power of ten (1e-999999999) becomes ±10^±far, far past
// every bound's scale and limit, on the same side of zero.
func exactBound(raw string) *big.Rat {
	mant, exp := raw, 0
	if i := strings.IndexAny(raw, "eE"); i >= 0 {
		mant = raw[:i]
		e, err := strconv.Atoi(strings.TrimPrefix(raw[i+1:], "+"))
		if err != nil { // beyond an int: as far as can be
			e = math.MaxInt
			if raw[i+1] == '-' {
				e = math.MinInt
			}
		}
		exp = e
	}
	// A mantissa of n characters times 10^exp, |exp| > n+40, is below
	// 10^-40 or above 10^40 in size.
	far := len(raw) + 40
	if exp >= -far && exp <= far {
		r, _ := new(big.Rat).SetString(raw)
		return r
	}
	m, _ := new(big.Rat).SetString(mant)
	if m.Sign() == 0 {
		return m
	}
	v := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(far)), nil))
	if exp < 0 {
		v.Inv(v)
	}
	if m.Sign() < 0 {
		v.Neg(v)
	}
	return v
}

// floorRat and ceilRat round r down and up to an integer.
func floorRat(r *big.Rat) *big.Int {
	return new(big.Int).Div(r.Num(), r.Denom()) // Euclidean: the floor, as Denom > 0
}

func ceilRat(r *big.Rat) *big.Int {
	n := floorRat(new(big.Rat).Neg(r))
	return n.Neg(n)
}

// numRange matches the numbers of [lo, hi] units written as JSON writes
// them without an exponent: no leading zeros, at most 16 digits after the
// point, and a minus sign only before a number below zero.
func numRange(lo, hi *big.Int) *expr {
	var alts []*expr
	if lo.Sign() < 0 {
		a := new(big.Int).Neg(hi)
		if a.Sign() < 1 {
			a.SetInt64(1)
		}
		alts = append(alts, concat(char('-'), unsignedRange(a, new(big.Int).Neg(lo))))
	}
	if hi.Sign() >= 0 {
		a := lo
		if a.Sign() < 0 {
			a = new(big.Int)
		}
		alts = append(alts, unsignedRange(a, hi))
	}
	return oneOf(alts)
}

// unsignedRange matches the numbers of [a, b] units, 0 <= a <= b: the
// integer part of a with a fraction from a's on, those strictly between
// with any fraction, and b's with a fraction up to b's.
func unsignedRange(a, b *big.Int) *expr {
	ia, fa := splitUnits(a)
	ib, fb := splitUnits(b)
	zeros, nines := strings.Repeat("0", 16), strings.Repeat("9", 16)
	if ia == ib {
		return concat(natRange(ia, ia), fraction(fa, fb))
	}
	alts := []*expr{concat(natRange(ia, ia), fraction(fa, nines))}
	if ib-ia > 1 {
		alts = append(alts, concat(natRange(ia+1, ib-1), fraction(zeros, nines)))
	}
	alts = append(alts, concat(natRange(ib, ib), fraction(zeros, fb)))
	return oneOf(alts)
}

// splitUnits returns a count of units (0 to maxUnits) as its integer
// part and its 16 digits after the point.
func splitUnits(u *big.Int) (int64, string) {
	q, r := new(big.Int).QuoRem(u, unitsPerOne, new(big.Int))
	f := r.String()
	return q.Int64(), strings.Repeat("0", 16-len(f)) + f
}

// fraction matches what follows an integer part whose 16 digits after
// the point lie in [lo, hi]: nothing (when lo is zero) or a point and 1
// to 16 digits that, padded with zeros, lie there.
func fraction(lo, hi string) *expr {
	point := concat(char('.'), fracDigits(lo, hi, false))
	if strings.Trim(lo, "0") == "" {
		return opt(point)
	}
	return point
}

// fracDigits matches the strings of up to len(lo) digits (at least one
// unless emptyOK) that, padded with zeros to that length, lie in
// [lo, hi] (lo <= hi, of one length): as digitsRange, the first digit
// fixed at lo's, strictly between, or fixed at hi's, and the rest
// recursively; the string may end wherever what remains of lo is zeros.
func fracDigits(lo, hi string, emptyOK bool) *expr {
	k := len(lo)
	if k == 0 {
		return empty()
	}
	zeros := strings.Trim(lo, "0") == ""
	if zeros && strings.Trim(hi, "9") == "" {
		least := 1
		if emptyOK {
			least = 0
		}
		return repeat(digit, least, k) // every string of up to k digits
	}
	var alts []*expr
	if emptyOK && zeros {
		alts = append(alts, empty())
	}
	a, b, n := rune(lo[0]), rune(hi[0]), k-1
	if a == b {
		alts = append(alts, concat(char(a), fracDigits(lo[1:], hi[1:], true)))
		return oneOf(alts)
	}
	alts = append(alts, concat(char(a), fracDigits(lo[1:], strings.Repeat("9", n), true)))
	if b-a > 1 {
		alts = append(alts, concat(class(runeSet{{a + 1, b - 1}}), repeat(digit, 0, n)))
	}
	alts = append(alts, concat(char(b), fracDigits(strings.Repeat("0", n), hi[1:], true)))
	return oneOf(alts)
}

// oneOf is the alternation of alts, or its one member.
func oneOf(alts []*expr) *expr {
	if len(alts) == 1 {
		return alts[0]
	}
	return alt(alts...)
}
