//! [`align`]: Go's `text/tabwriter` as vegeta configures it (minwidth 0, tabwidth 8,
//! padding 2, padchar `' '`), over a whole text at once.
//!
//! Cells end at `\t`; the last cell of a line is not aligned. A column block is a run of
//! consecutive lines that have a cell in that column; its width is the widest cell in
//! the block plus the padding. A line without tabs therefore ends every block. Widths
//! count characters (Go counts runes), so `µs` is two wide, not three.

/// Spaces after the widest cell of a column.
const PADDING: usize = 2;

/// Aligns `text` like Go's tabwriter. `min_widths[i]` is the least width of column `i`
/// (Go has one minimum for all columns, 0 in vegeta); we use it to line our extra rows
/// up with vegeta's block above them.
pub fn align(text: &str, min_widths: &[usize]) -> String {
    let lines: Vec<Vec<&str>> = text.split_inclusive('\n').map(cells).collect();
    let mut out = String::with_capacity(text.len() + text.len() / 2);
    let mut widths = Vec::new();
    format_block(&lines, 0, lines.len(), &mut widths, min_widths, &mut out);
    out
}

/// The cells of one line: every `\t`-terminated cell, then the rest (maybe with `\n`).
fn cells(line: &str) -> Vec<&str> {
    line.split('\t').collect()
}

/// Go's `Writer.format`: finds the column blocks of `lines[start..end]` for the next
/// column, fixes their width and recurses to the columns right of it.
fn format_block(
    lines: &[Vec<&str>],
    mut start: usize,
    end: usize,
    widths: &mut Vec<usize>,
    min_widths: &[usize],
    out: &mut String,
) {
    let column = widths.len();
    let mut this = start;
    while this < end {
        if column + 1 >= lines[this].len() {
            this += 1;
            continue;
        }
        write_lines(&lines[start..this], widths, out);
        start = this;
        let mut width = min_widths.get(column).copied().unwrap_or(0);
        while this < end && column + 1 < lines[this].len() {
            width = width.max(lines[this][column].chars().count() + PADDING);
            this += 1;
        }
        widths.push(width);
        format_block(lines, start, this, widths, min_widths, out);
        widths.pop();
        start = this;
    }
    write_lines(&lines[start..end], widths, out);
}

fn write_lines(lines: &[Vec<&str>], widths: &[usize], out: &mut String) {
    for line in lines {
        for (index, cell) in line.iter().enumerate() {
            out.push_str(cell);
            if let Some(&width) = widths.get(index).filter(|_| index + 1 < line.len()) {
                let used = cell.chars().count();
                out.extend(std::iter::repeat_n(' ', width.saturating_sub(used)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_like_go_tabwriter() {
        // Expected outputs come from Go's text/tabwriter with (0, 8, 2, ' ', 0).
        let rows: &[(&str, &str)] = &[
            ("a\tb\tc\n", "a  b  c\n"),
            ("aaa\tb\nc\tddd\n", "aaa  b\nc    ddd\n"),
            // A line without tabs ends the block: the columns restart below it.
            (
                "long label\tx\nbreak\nl\ty\n",
                "long label  x\nbreak\nl  y\n",
            ),
            // An empty cell is still padded; the last cell is never padded.
            (
                "Bucket\t\t#\n[0s,\t1ms]\t5\n",
                "Bucket        #\n[0s,    1ms]  5\n",
            ),
            // Runes, not bytes: µ is one column wide.
            ("1µs\tx\nab\ty\n", "1µs  x\nab   y\n"),
            // A line with fewer cells splits the block of the deeper column only.
            ("a\tb\tc\nd\te\nf\tg\th\n", "a  b  c\nd  e\nf  g  h\n"),
            // Trailing text without a newline is kept.
            ("a\tb", "a  b"),
            ("", ""),
        ];
        for (input, want) in rows {
            assert_eq!(align(input, &[]), *want, "input {input:?}");
        }
    }

    #[test]
    fn deeper_blocks_are_sized_separately() {
        // Column 1 of lines 1-2 and of line 4 are different blocks (line 3 has one cell
        // in column 0 only), as in Go.
        let text = "x\tshort\tz\nx\tlonger one\tz\nx\ty\nx\ta\tz\n";
        let want = "x  short       z\nx  longer one  z\nx  y\nx  a  z\n";
        assert_eq!(align(text, &[]), want);
    }

    #[test]
    fn minimum_widths_pad_narrow_columns() {
        assert_eq!(align("a\tb\tc\n", &[4, 3]), "a   b  c\n");
        // A wider cell still wins over the minimum.
        assert_eq!(align("abcdef\tb\tc\n", &[4]), "abcdef  b  c\n");
    }
}
