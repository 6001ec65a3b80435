//! Opening a profile for the reading commands: the format is told from the
//! file's first bytes (`hprof_format::identify`) before anything else is
//! read, so a file that is not a profile (gigabytes of zeros, `/dev/zero`)
//! is refused at once; a binary file is then streamed, an ASCII one read
//! whole, stopping at the first NUL byte (text never holds one).

use hprof_format::ParseError;
use hprof_format::identify::{FileFormat, IDENTIFY_LEN, identify};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Chain, Cursor, Read};
use std::path::Path;

/// Bytes read at a time.
const BUFFER: usize = 1 << 20;

/// An opened profile.
pub enum Contents {
    /// A binary file as a stream from its first byte.
    Binary(BufReader<Chain<Cursor<Vec<u8>>, File>>),
    /// An ASCII file's whole text.
    Ascii(Vec<u8>),
}

/// Why a file could not be opened as a profile.
pub enum OpenError {
    /// The file could not be read.
    Io(io::Error),
    /// It is not a profile: what is wrong and where.
    Malformed(ParseError),
}

impl From<io::Error> for OpenError {
    fn from(error: io::Error) -> Self {
        OpenError::Io(error)
    }
}

/// Opens `path` and tells its format from its first bytes.
pub fn open(path: &Path) -> Result<Contents, OpenError> {
    let mut file = File::open(path)?;
    let mut start = Vec::with_capacity(IDENTIFY_LEN);
    (&mut file)
        .take(IDENTIFY_LEN as u64)
        .read_to_end(&mut start)?;
    match identify(&start).map_err(OpenError::Malformed)? {
        FileFormat::Binary(_) => Ok(Contents::Binary(BufReader::with_capacity(
            BUFFER,
            Cursor::new(start).chain(file),
        ))),
        FileFormat::Ascii => read_text(start, file).map(Contents::Ascii),
    }
}

/// The whole text of an ASCII file whose first bytes `start` were read.
fn read_text(start: Vec<u8>, file: File) -> Result<Vec<u8>, OpenError> {
    let mut text = Vec::new();
    let mut input = BufReader::with_capacity(BUFFER, Cursor::new(start).chain(file));
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            return Ok(text);
        }
        if let Some(at) = chunk.iter().position(|&b| b == 0) {
            return Err(OpenError::Malformed(ParseError {
                offset: (text.len() + at) as u64,
                message: "a NUL byte in an ASCII profile, which is text".into(),
            }));
        }
        text.extend_from_slice(chunk);
        let read = chunk.len();
        input.consume(read);
    }
}
