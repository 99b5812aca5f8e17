//! JSON as Go's `encoding/json` writes it, one value at a time: floats, strings, arrays
//! of strings. The one JSON writer of every report renderer (and `plot`'s page data);
//! a leaf, so the renderers that write JSON need not import each other.

use std::fmt::Write as _;

/// A float as Go's `encoding/json` writes it: shortest round-trip digits, plain
/// notation for 1e-6 <= |x| < 1e21, else `1e-7` / `1.5e+21`. Non-finite values (which
/// Go refuses) print as 0.
pub fn push_float(out: &mut String, value: f64) {
    if !value.is_finite() {
        out.push('0');
        return;
    }
    let magnitude = value.abs();
    if magnitude == 0.0 || (1e-6..1e21).contains(&magnitude) {
        let _ = write!(out, "{value}");
        return;
    }
    let text = format!("{value:e}");
    match text.split_once('e') {
        Some((mantissa, exponent)) if !exponent.starts_with('-') => {
            let _ = write!(out, "{mantissa}e+{exponent}");
        }
        _ => out.push_str(&text),
    }
}

/// Strings separated by commas (the inside of a JSON array), each as [`push_string`]
/// writes it.
pub fn push_strings<S: AsRef<str>>(out: &mut String, items: impl IntoIterator<Item = S>) {
    push_each(out, items, |out, item| push_string(out, item.as_ref()));
}

/// A JSON array: `[`, each item as `each` writes it, separated by commas, `]`.
pub fn push_list<T>(
    out: &mut String,
    items: impl IntoIterator<Item = T>,
    each: impl FnMut(&mut String, T),
) {
    out.push('[');
    push_each(out, items, each);
    out.push(']');
}

/// `null`, or the value as `each` writes it.
pub fn push_nullable<T>(out: &mut String, value: Option<T>, each: impl FnOnce(&mut String, T)) {
    match value {
        Some(value) => each(out, value),
        None => out.push_str("null"),
    }
}

/// The items as `each` writes them, separated by commas.
fn push_each<T>(
    out: &mut String,
    items: impl IntoIterator<Item = T>,
    mut each: impl FnMut(&mut String, T),
) {
    for (index, item) in items.into_iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        each(out, item);
    }
}

/// A string as Go's `encoding/json` writes it with HTML escaping on (the default):
/// `<`, `>`, `&`, U+2028 and U+2029 become `\uXXXX`, control characters are escaped.
pub fn push_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' | '\0'..='\u{1f}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            _ => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_go() {
        // Expected values from Go's json.Marshal(float64).
        let rows: &[(f64, &str)] = &[
            (100.0, "100"),
            (0.1, "0.1"),
            (0.125, "0.125"),
            (33.333333333333336, "33.333333333333336"),
            (1e-7, "1e-7"),
            (1e-6, "0.000001"),
            (1.5e21, "1.5e+21"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (0.0, "0"),
            (-2.5, "-2.5"),
            (f64::NAN, "0"),
            (f64::INFINITY, "0"),
        ];
        for &(value, want) in rows {
            let mut out = String::new();
            push_float(&mut out, value);
            assert_eq!(out, want, "{value}");
        }
    }

    #[test]
    fn strings_escape_like_go() {
        let rows: &[(&str, &str)] = &[
            ("plain", r#""plain""#),
            ("a\"b\\c", r#""a\"b\\c""#),
            ("<&>", r#""\u003c\u0026\u003e""#),
            (
                "\u{2028}\t\u{1}\u{8}\u{c}\n\r",
                r#""\u2028\t\u0001\b\f\n\r""#,
            ),
            ("µs", "\"µs\""),
        ];
        for (text, want) in rows {
            let mut out = String::new();
            push_string(&mut out, text);
            assert_eq!(out, *want, "{text:?}");
        }
    }
}
