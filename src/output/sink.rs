//! Opening the destination: the output file or the `net=` socket.

use crate::options::{Destination, Options};
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Where profile bytes go.
pub enum Sink {
    File {
        path: String,
        out: BufWriter<File>,
    },
    Socket {
        peer: String,
        stream: TcpStream,
        out: BufWriter<TcpStream>,
    },
    /// For tests: an in-memory buffer.
    Memory(Vec<u8>),
}

/// Why the destination could not be opened; the message is HPROF's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenError(pub String);

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Output buffer size, as in the original agent.
const BUFFER_BYTES: usize = 64 * 1024;

impl Sink {
    /// Opens the destination the options name. `pid` is used for `force=n`.
    pub fn open(options: &Options, pid: u32) -> Result<Sink, OpenError> {
        match &options.destination {
            Destination::Net { host, port } => Self::connect(host, *port),
            Destination::File(name) => {
                let requested = name.as_deref().unwrap_or(options.default_file_name());
                let binary = options.format == crate::options::Format::Binary;
                let path = if !options.force && Path::new(requested).exists() {
                    super::unique_file_name(requested, binary, pid)
                } else {
                    requested.to_owned()
                };
                Self::create_file(&path)
            }
        }
    }

    fn create_file(path: &str) -> Result<Sink, OpenError> {
        // Remove first so that a file owned by someone else, or a symbolic
        // link, is replaced rather than written through.
        let _ = std::fs::remove_file(path);
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o644)
            .open(path)
            .map(|file| Sink::File {
                path: path.to_owned(),
                out: BufWriter::with_capacity(BUFFER_BYTES, file),
            })
            .map_err(|e| OpenError(format!("can't create profile file: {path} ({e})")))
    }

    fn connect(host: &str, port: u16) -> Result<Sink, OpenError> {
        let failed = || OpenError(format!("can't connect to {host}:{port}"));
        let addrs = (host, port).to_socket_addrs().map_err(|_| failed())?;
        let stream = addrs
            .into_iter()
            .find_map(|addr| TcpStream::connect(addr).ok())
            .ok_or_else(failed)?;
        let _ = stream.set_nodelay(true);
        let writer = stream.try_clone().map_err(|_| failed())?;
        Ok(Sink::Socket {
            peer: format!("{host}:{port}"),
            stream,
            out: BufWriter::with_capacity(BUFFER_BYTES, writer),
        })
    }

    /// A description for messages: the file name or `host:port`.
    pub fn describe(&self) -> &str {
        match self {
            Sink::File { path, .. } => path,
            Sink::Socket { peer, .. } => peer,
            Sink::Memory(_) => "<memory>",
        }
    }

    /// A second handle on the socket, for reading front-end commands.
    pub fn socket_reader(&self) -> Option<TcpStream> {
        match self {
            Sink::Socket { stream, .. } => stream.try_clone().ok(),
            _ => None,
        }
    }

    /// Flushes and closes: the file is synced, the socket shut down.
    pub fn finish(&mut self) -> io::Result<()> {
        self.flush()?;
        match self {
            Sink::File { out, .. } => out.get_ref().sync_all(),
            Sink::Socket { stream, .. } => stream.shutdown(Shutdown::Both),
            Sink::Memory(_) => Ok(()),
        }
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::File { out, .. } => out.write(buf),
            Sink::Socket { out, .. } => out.write(buf),
            Sink::Memory(v) => v.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::File { out, .. } => out.flush(),
            Sink::Socket { out, .. } => out.flush(),
            Sink::Memory(_) => Ok(()),
        }
    }
}
