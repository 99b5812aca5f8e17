//! [`HeaderDecoder`]: HPACK decoding (RFC 7541) for the client's side of a connection:
//! the static table, the connection's dynamic table, and Huffman strings (decoded by
//! `httlib-huffman`'s flattened tables). Fields go to a callback as borrowed slices,
//! so a steady stream of responses allocates nothing: a literal the server asks to
//! index is decoded and stored once per change (e.g. a new `date` each second), and
//! its repeats share that entry.

use std::collections::VecDeque;
use std::sync::Arc;

/// RFC 7541 Appendix A.
const STATIC_TABLE: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// What an entry costs in the table beyond its bytes (RFC 7541 §4.1).
const ENTRY_OVERHEAD: usize = 32;

/// One dynamic table entry: name and value in one allocation, shared by every copy.
#[derive(Clone)]
struct Entry {
    bytes: Arc<[u8]>,
    name_len: usize,
}

/// How many recently indexed fields are remembered by their encoded bytes.
const RECENT_FIELDS: usize = 8;

/// A field the server asked to index, by its bytes in the block, and what they meant.
struct Recent {
    encoded: Box<[u8]>,
    entry: Entry,
}

impl Entry {
    fn name(&self) -> &[u8] {
        &self.bytes[..self.name_len]
    }

    fn value(&self) -> &[u8] {
        &self.bytes[self.name_len..]
    }

    fn size(&self) -> usize {
        self.bytes.len() + ENTRY_OVERHEAD
    }
}

/// Where a decoded string is: in the block, or in a scratch buffer.
#[derive(Clone, Copy)]
enum Text {
    Block(usize, usize),
    Scratch,
}

pub(crate) struct HeaderDecoder {
    /// Newest first.
    entries: VecDeque<Entry>,
    size: usize,
    max_size: usize,
    /// The most the server may set `max_size` to: our SETTINGS_HEADER_TABLE_SIZE.
    allowed_max_size: usize,
    name: Vec<u8>,
    value: Vec<u8>,
    recent: Vec<Recent>,
    next_recent: usize,
}

impl HeaderDecoder {
    pub(crate) fn new(table_bytes: usize) -> HeaderDecoder {
        HeaderDecoder {
            entries: VecDeque::new(),
            size: 0,
            max_size: table_bytes,
            allowed_max_size: table_bytes,
            name: Vec::new(),
            value: Vec::new(),
            recent: Vec::new(),
            next_recent: 0,
        }
    }

    /// Decodes a whole header block, handing each field whose name is `wanted` to
    /// `field(name, value)`. A value nobody wants and the table need not keep is
    /// skipped, not decoded (most of a response head, to a load generator).
    pub(crate) fn decode(
        &mut self,
        block: &[u8],
        wanted: impl Fn(&[u8]) -> bool,
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), &'static str> {
        let mut at = 0;
        let mut fields_seen = false;
        while at < block.len() {
            let first = block[at];
            if first & 0x80 != 0 {
                let index = integer(block, &mut at, 7)?;
                let (name, value) = lookup(&self.entries, index)?;
                if wanted(name) {
                    field(name, value);
                }
            } else if first & 0xe0 == 0x20 {
                // A table size update comes before the block's fields (§4.2).
                if fields_seen {
                    return Err("hpack: table size update after a field");
                }
                let size = integer(block, &mut at, 5)?;
                if size > self.allowed_max_size {
                    return Err("hpack: table size update above our SETTINGS");
                }
                self.max_size = size;
                self.evict_to(size);
                continue;
            } else {
                self.literal(block, &mut at, &wanted, &mut field)?;
            }
            fields_seen = true;
        }
        Ok(())
    }

    /// A literal field (§6.2) at `block[*at]`. One the table must keep, with a name
    /// of its own or from the static table, is first looked up among the recently
    /// kept ones by its encoded bytes: servers index the same fields on every response
    /// (nginx: `server`, `date`, `content-type`, `content-length`), so a repeat costs
    /// a comparison, not Huffman decoding and an allocation.
    fn literal(
        &mut self,
        block: &[u8],
        at: &mut usize,
        wanted: &impl Fn(&[u8]) -> bool,
        field: &mut impl FnMut(&[u8], &[u8]),
    ) -> Result<(), &'static str> {
        let start = *at;
        let indexing = block[start] & 0xc0 == 0x40;
        let index = integer(block, at, if indexing { 6 } else { 4 })?;
        let self_contained = indexing && index <= STATIC_TABLE.len();
        if self_contained {
            let mut end = *at;
            if index == 0 {
                skip_text(block, &mut end)?;
            }
            skip_text(block, &mut end)?;
            let encoded = &block[start..end];
            if let Some(recent) = self.recent.iter().find(|r| *r.encoded == *encoded) {
                let entry = recent.entry.clone();
                *at = end;
                if wanted(entry.name()) {
                    field(entry.name(), entry.value());
                }
                self.insert(entry);
                return Ok(());
            }
        }
        let name = match index {
            0 => text(block, at, &mut self.name)?,
            index => {
                let (name, _) = lookup(&self.entries, index)?;
                self.name.clear();
                self.name.extend_from_slice(name);
                Text::Scratch
            }
        };
        let name = resolve(block, name, &self.name);
        if !indexing && !wanted(name) {
            return skip_text(block, at);
        }
        let value = text(block, at, &mut self.value)?;
        let value = resolve(block, value, &self.value);
        if wanted(name) {
            field(name, value);
        }
        if indexing {
            let entry = Entry {
                bytes: [name, value].concat().into(),
                name_len: name.len(),
            };
            if self_contained {
                self.remember(&block[start..*at], entry.clone());
            }
            self.insert(entry);
        }
        Ok(())
    }

    /// Keeps `entry` among the recent ones, in place of the oldest.
    fn remember(&mut self, encoded: &[u8], entry: Entry) {
        let recent = Recent {
            encoded: encoded.into(),
            entry,
        };
        if self.recent.len() < RECENT_FIELDS {
            self.recent.push(recent);
        } else {
            self.recent[self.next_recent] = recent;
        }
        self.next_recent = (self.next_recent + 1) % RECENT_FIELDS;
    }

    fn insert(&mut self, entry: Entry) {
        let size = entry.size();
        if size > self.max_size {
            // An entry larger than the table empties it (§4.4).
            self.entries.clear();
            self.size = 0;
            return;
        }
        self.evict_to(self.max_size - size);
        self.size += size;
        self.entries.push_front(entry);
    }

    fn evict_to(&mut self, size: usize) {
        while self.size > size {
            let Some(oldest) = self.entries.pop_back() else {
                break;
            };
            self.size -= oldest.size();
        }
    }
}

/// Field `index` of the static table, then the dynamic one (newest first).
fn lookup(entries: &VecDeque<Entry>, index: usize) -> Result<(&[u8], &[u8]), &'static str> {
    match index {
        0 => Err("hpack: index 0"),
        1..=61 => {
            let (name, value) = STATIC_TABLE[index - 1];
            Ok((name.as_bytes(), value.as_bytes()))
        }
        _ => entries
            .get(index - 62)
            .map(|entry| (entry.name(), entry.value()))
            .ok_or("hpack: index past the tables"),
    }
}

/// An integer with an `prefix_bits`-bit prefix at `block[*at]` (§5.1).
fn integer(block: &[u8], at: &mut usize, prefix_bits: u32) -> Result<usize, &'static str> {
    let mask = (1usize << prefix_bits) - 1;
    let mut value = usize::from(block[*at]) & mask;
    *at += 1;
    if value < mask {
        return Ok(value);
    }
    let mut shift = 0;
    loop {
        let byte = *block.get(*at).ok_or("hpack: integer cut short")?;
        *at += 1;
        if shift > 28 {
            return Err("hpack: integer too large");
        }
        value += usize::from(byte & 0x7f) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
}

/// A string literal at `block[*at]` (§5.2): its place in the block, or Huffman
/// decoded into `scratch`.
fn text(block: &[u8], at: &mut usize, scratch: &mut Vec<u8>) -> Result<Text, &'static str> {
    let (huffman, start, end) = string_bounds(block, at)?;
    if !huffman {
        return Ok(Text::Block(start, end));
    }
    scratch.clear();
    httlib_huffman::decode(
        &block[start..end],
        scratch,
        httlib_huffman::DecoderSpeed::FourBits,
    )
    .map_err(|_| "hpack: bad huffman string")?;
    Ok(Text::Scratch)
}

/// Steps over a string literal without decoding it.
fn skip_text(block: &[u8], at: &mut usize) -> Result<(), &'static str> {
    string_bounds(block, at).map(|_| ())
}

/// A string literal's Huffman flag and place in `block`; `*at` moves past it.
fn string_bounds(block: &[u8], at: &mut usize) -> Result<(bool, usize, usize), &'static str> {
    let huffman = block.get(*at).ok_or("hpack: string missing")? & 0x80 != 0;
    let len = integer(block, at, 7)?;
    let end = at
        .checked_add(len)
        .filter(|end| *end <= block.len())
        .ok_or("hpack: string longer than the block")?;
    Ok((huffman, std::mem::replace(at, end), end))
}

fn resolve<'a>(block: &'a [u8], text: Text, scratch: &'a [u8]) -> &'a [u8] {
    match text {
        Text::Block(start, end) => &block[start..end],
        Text::Scratch => scratch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h2::request::put_integer;

    type Decoded = Result<Vec<(Vec<u8>, Vec<u8>)>, ()>;

    /// Ours and loona-hpack's decoders over the same blocks, field by field.
    fn both(blocks: &[Vec<u8>]) -> (Vec<Decoded>, Vec<Decoded>) {
        let mut ours = HeaderDecoder::new(4096);
        let mut theirs = loona_hpack::Decoder::new();
        let mut got = Vec::new();
        let mut want = Vec::new();
        for block in blocks {
            let mut fields = Vec::new();
            let result = ours.decode(
                block,
                |_| true,
                |n, v| fields.push((n.to_vec(), v.to_vec())),
            );
            got.push(result.map(|()| fields).map_err(|_| ()));
            want.push(theirs.decode(block).map_err(|_| ()));
        }
        (got, want)
    }

    fn string(out: &mut Vec<u8>, bytes: &[u8], huffman: bool) {
        let mut coded = Vec::new();
        if huffman {
            httlib_huffman::encode(bytes, &mut coded).unwrap();
        } else {
            coded.extend_from_slice(bytes);
        }
        let flag = if huffman { 0x80 } else { 0 };
        put_integer(out, 7, flag, coded.len());
        out.extend_from_slice(&coded);
    }

    #[test]
    fn the_static_table_is_the_rfcs() {
        let blocks: Vec<Vec<u8>> = (1..=61).map(|i| vec![0x80 | i as u8]).collect();
        let (got, want) = both(&blocks);
        assert_eq!(got, want);
    }

    #[test]
    fn every_representation_matches_another_decoder() {
        let mut indexed_literals = Vec::new();
        for (i, huffman) in [(0, false), (1, true), (2, true)] {
            let mut block = Vec::new();
            // :status 503 by indexed name, with incremental indexing.
            put_integer(&mut block, 6, 0x40, 8);
            string(&mut block, b"503", huffman);
            // A new name, indexed.
            block.push(0x40);
            string(&mut block, b"x-request-id", huffman);
            string(&mut block, format!("abc-{i}").as_bytes(), huffman);
            // Without indexing and never indexed.
            put_integer(&mut block, 4, 0x00, 46);
            string(&mut block, b"/next?a=1", huffman);
            block.push(0x10);
            string(&mut block, b"set-cookie", huffman);
            string(&mut block, b"k=v; HttpOnly", huffman);
            // The entries just added, newest first.
            block.extend([0x80 | 62, 0x80 | 63]);
            indexed_literals.push(block);
        }
        // A size update that evicts everything, then one that allows a little again;
        // the evicted entries are gone for both decoders.
        let mut shrink = vec![0x20];
        put_integer(&mut shrink, 5, 0x20, 100);
        shrink.push(0x88);
        indexed_literals.push(shrink);
        indexed_literals.push(vec![0x80 | 62]);
        let (got, want) = both(&indexed_literals);
        assert_eq!(got, want);
        let (last, rest) = got.split_last().unwrap();
        assert!(rest.iter().all(Result::is_ok) && last.is_err(), "{got:?}");
    }

    #[test]
    fn repeated_indexed_fields_share_one_entry_and_decode_the_same() {
        let mut block = Vec::new();
        put_integer(&mut block, 6, 0x40, 54);
        string(&mut block, b"nginx", true);
        block.push(0x40);
        string(&mut block, b"x-trace", true);
        string(&mut block, b"same", false);
        // By a name from the dynamic table: its meaning moves, so it is not remembered.
        put_integer(&mut block, 6, 0x40, 63);
        string(&mut block, b"other", true);
        block.extend([0x80 | 62, 0x80 | 63, 0x80 | 64]);
        let blocks = vec![block.clone(), block.clone(), block];
        let (got, want) = both(&blocks);
        assert_eq!(got, want);
        assert!(got.iter().all(Result::is_ok), "{got:?}");

        let mut decoder = HeaderDecoder::new(4096);
        for block in &blocks[..2] {
            decoder.decode(block, |_| true, |_, _| {}).unwrap();
        }
        let newest = |i: usize| &decoder.entries[i].bytes;
        // Newest first: the second block's x-trace and server are the first block's.
        assert!(Arc::ptr_eq(newest(1), newest(4)) && Arc::ptr_eq(newest(2), newest(5)));
        assert!(
            !Arc::ptr_eq(newest(0), newest(3)),
            "indexed by a dynamic name"
        );
    }

    #[test]
    fn bad_blocks_are_errors_never_panics() {
        let rows: Vec<(Vec<u8>, &str)> = vec![
            (vec![0x80], "hpack: index 0"),
            (vec![0x80 | 62], "hpack: index past the tables"),
            (vec![0xff, 0xff], "hpack: integer cut short"),
            (
                vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f],
                "hpack: integer too large",
            ),
            (
                vec![0x40, 0x05, b'a'],
                "hpack: string longer than the block",
            ),
            (vec![0x40], "hpack: string missing"),
            (vec![0x40, 0x81, 0xff, 0x00], "hpack: bad huffman string"),
            (
                vec![0x3f, 0xe2, 0x1f],
                "hpack: table size update above our SETTINGS",
            ),
            (vec![0x88, 0x20], "hpack: table size update after a field"),
        ];
        for (block, want) in rows {
            let mut decoder = HeaderDecoder::new(4096);
            let result = decoder.decode(&block, |_| true, |_, _| {});
            assert_eq!(result, Err(want), "{block:?}");
        }
    }

    #[test]
    fn unwanted_values_are_skipped_but_indexed_ones_still_kept() {
        let mut block = vec![0x88];
        put_integer(&mut block, 4, 0x00, 33);
        string(&mut block, b"Tue, 24 Nov 2026 03:00:00 GMT", true);
        put_integer(&mut block, 6, 0x40, 54);
        string(&mut block, b"nginx", true);
        put_integer(&mut block, 4, 0x00, 46);
        string(&mut block, b"/there", true);
        block.push(0x80 | 62);
        let mut decoder = HeaderDecoder::new(4096);
        let mut seen = Vec::new();
        let wanted = |name: &[u8]| name == b":status" || name == b"location" || name == b"server";
        decoder
            .decode(&block, wanted, |n, v| seen.push((n.to_vec(), v.to_vec())))
            .unwrap();
        let pairs: Vec<(&[u8], &[u8])> = vec![
            (b":status", b"200"),
            (b"server", b"nginx"),
            (b"location", b"/there"),
            (b"server", b"nginx"),
        ];
        let want: Vec<(Vec<u8>, Vec<u8>)> = pairs
            .iter()
            .map(|(n, v)| (n.to_vec(), v.to_vec()))
            .collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn the_table_keeps_to_its_size() {
        let mut decoder = HeaderDecoder::new(100);
        for i in 0..10 {
            let mut block = vec![0x40];
            string(&mut block, b"name", false);
            string(&mut block, format!("value-{i}").as_bytes(), false);
            decoder.decode(&block, |_| true, |_, _| {}).unwrap();
        }
        // Each entry is 4 + 7 + 32 = 43 bytes: two fit in 100.
        assert_eq!((decoder.entries.len(), decoder.size), (2, 86));
        let mut seen = Vec::new();
        decoder
            .decode(
                &[0x80 | 62, 0x80 | 63],
                |_| true,
                |_, v| seen.push(v.to_vec()),
            )
            .unwrap();
        assert_eq!(seen, [b"value-9".to_vec(), b"value-8".to_vec()]);
        let mut big = vec![0x40];
        string(&mut big, b"name", false);
        string(&mut big, &[b'v'; 80], false);
        decoder.decode(&big, |_| true, |_, _| {}).unwrap();
        assert_eq!(
            (decoder.entries.len(), decoder.size),
            (0, 0),
            "too big: emptied"
        );
    }
}
