package envelope

// ValidateText checks free text stored beside events (an effect's
// summary, resource, a decision's name or reason) by the rules of an
// event's string attributes: valid UTF-8, no control character (Unicode
// Cc), no leading or trailing white space, at most MaxAttributeBytes. An
// empty value is refused when required. It returns an *InvalidError or a
// *TooLargeError naming field.
func ValidateText(field, v string, required bool) error { return checkString(field, v, required) }
