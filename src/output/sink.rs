//! Opening the destination: the output file or the `net=` socket.
//!
//! The output file is opened the way any tool opens a file it was asked to
//! write: an existing regular file is truncated (at the first write, so a
//! run that never starts leaves it as it was), a device or a FIFO is
//! written into as it is. Nothing at the path is ever removed or replaced.
//! A new file is made 0600; a file or FIFO that another user (not root)
//! owns, or a symbolic link of theirs anywhere on the path, is refused
//! (crates/hprof-private-files), so that no one can plant the path in a
//! shared directory and read the profile or send it over a file of ours.

use super::naming;
use crate::options::{Destination, Options};
use hprof_private_files as private_files;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// Where profile bytes go.
pub enum Sink {
    File(FileSink),
    Socket {
        peer: String,
        stream: TcpStream,
        out: BufWriter<TcpStream>,
    },
    /// For tests: an in-memory buffer.
    Memory(Vec<u8>),
}

/// An open output file.
pub struct FileSink {
    path: PathBuf,
    /// The path as text, for messages.
    label: String,
    out: BufWriter<File>,
    /// The file was a regular file before we opened it: it is emptied
    /// just before the first byte is written.
    truncate_first: bool,
    /// The file did not exist before: we made it.
    created: bool,
    /// Some bytes were written.
    written: bool,
    /// Bytes accepted so far: the file offset of the next byte.
    position: u64,
    /// A regular file, which can be read back and patched in place.
    regular: bool,
    /// A regular file or a block device: a write always ends, however
    /// slowly the kernel takes it (no peer has to read).
    always_drains: bool,
    /// Testing aid (`X=0x80000`): the first write sleeps [`SLOW_WRITE`].
    slow_first_write: bool,
}

/// How long the first write sleeps under `X=0x80000`: longer than the
/// writer's stall limit, as a disk under heavy writeback can take.
const SLOW_WRITE: std::time::Duration = std::time::Duration::from_secs(7);

/// Work done on the output file in place (a heap dump's references
/// patched), given a handle to read it back, the one it is written
/// through, and a function to call as the work progresses (the writer's
/// waiters then know it is not stalled).
pub type FileWork = Box<dyn FnOnce(&File, &File, &dyn Fn()) -> io::Result<u64> + Send>;

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
    /// Opens the destination the options name. `pid` is used for `force=n`;
    /// `raw_file_name` is the `file=` value as the command line's bytes
    /// (a name that is not UTF-8 is kept byte for byte).
    pub fn open(
        options: &Options,
        pid: u32,
        raw_file_name: Option<&[u8]>,
    ) -> Result<Sink, OpenError> {
        match &options.destination {
            Destination::Net { host, port } => Self::connect(host, *port),
            Destination::File(name) => {
                let requested: PathBuf = match (raw_file_name, name) {
                    (Some(raw), Some(_)) => OsStr::from_bytes(raw).into(),
                    (None, Some(name)) => name.into(),
                    (_, None) => options.default_file_name().into(),
                };
                let binary = options.format == crate::options::Format::Binary;
                let path = if !options.force && requested.exists() {
                    naming::unique_file_name(requested.as_os_str(), binary, pid)
                } else if naming::written_during_this_run(&requested) {
                    let own = naming::unique_file_name(requested.as_os_str(), binary, pid);
                    eprintln!(
                        "HPROF: another JVM of this hprof-rs run writes {}; this one (pid {pid}) writes {}",
                        requested.display(),
                        own.display()
                    );
                    own
                } else {
                    requested
                };
                let slow = options.experiment & crate::options::experiment::SLOW_FILE_WRITE != 0;
                Self::open_file(&path).map(|mut file| {
                    file.slow_first_write = slow;
                    Sink::File(file)
                })
            }
        }
    }

    fn open_file(path: &Path) -> Result<FileSink, OpenError> {
        let label = path.to_string_lossy().into_owned();
        let cannot = |e: io::Error| OpenError(format!("can't create profile file: {label} ({e})"));
        let refuse = |why: &str| OpenError(format!("can't create profile file: {label} ({why})"));
        // Non-blocking, so that a FIFO nobody reads fails here (ENXIO)
        // instead of holding the JVM's start-up until a reader comes. A
        // new file is made 0600, like the JVM's own heap dumps; a link or
        // file another user put anywhere on the path is refused.
        let opened = private_files::open(path, true).map_err(|e| match e {
            private_files::Error::Io(e) => cannot(e),
            private_files::Error::ForeignFile => refuse("it belongs to another user"),
            private_files::Error::ForeignLink(link) if link == path => {
                refuse("a symbolic link owned by another user")
            }
            private_files::Error::ForeignLink(link) => refuse(&format!(
                "{} is a symbolic link owned by another user",
                link.display()
            )),
        })?;
        let (file, existed) = (opened.file, !opened.created);
        crate::sys::set_blocking(&file).map_err(cannot)?;
        let metadata = file.metadata().map_err(cannot)?;
        Ok(FileSink {
            path: path.to_owned(),
            label: label.clone(),
            out: BufWriter::with_capacity(BUFFER_BYTES, file),
            truncate_first: existed && metadata.is_file(),
            created: !existed,
            written: false,
            position: 0,
            regular: metadata.is_file(),
            always_drains: metadata.is_file() || metadata.file_type().is_block_device(),
            slow_first_write: false,
        })
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
            Sink::File(file) => &file.label,
            Sink::Socket { peer, .. } => peer,
            Sink::Memory(_) => "<memory>",
        }
    }

    /// The output file's path (None for a socket).
    pub fn file_path(&self) -> Option<&Path> {
        match self {
            Sink::File(file) => Some(&file.path),
            Sink::Socket { .. } | Sink::Memory(_) => None,
        }
    }

    /// Whether a write can block for ever for want of a reader (a socket,
    /// a FIFO, a terminal): only such an output is given up when it makes
    /// no progress. A regular file or a block device is written to the end,
    /// however slowly the disk takes it.
    pub fn may_stall_forever(&self) -> bool {
        match self {
            Sink::File(file) => !file.always_drains,
            Sink::Socket { .. } => true,
            Sink::Memory(_) => false,
        }
    }

    /// A second handle on the socket, which can shut it down from another
    /// thread (ending a write blocked on a peer that does not read).
    pub fn socket_handle(&self) -> Option<TcpStream> {
        match self {
            Sink::Socket { stream, .. } => stream.try_clone().ok(),
            _ => None,
        }
    }

    /// The run ended before anything was written (the agent refused to
    /// start): a file we created is removed again, if it is still the one
    /// at the path (walked as it was opened); anything that was at the
    /// path before is left untouched.
    pub fn abandon(&mut self) {
        if let Sink::File(file) = self
            && file.created
            && !file.written
        {
            let _ = private_files::remove_created(&file.path, file.out.get_ref());
        }
    }

    /// The file offset of the next byte, when the output is a regular file
    /// (which can be patched in place later); None for anything else.
    pub fn position(&self) -> Option<u64> {
        match self {
            Sink::File(file) if file.regular => Some(file.position),
            _ => None,
        }
    }

    /// Flushes, then runs `work` on the output file (a regular file only),
    /// read back through a second handle on the same open file.
    pub fn work_on_file(&mut self, work: FileWork, progress: &dyn Fn()) -> io::Result<u64> {
        let Sink::File(file) = self else {
            return Err(io::Error::other("the output is not a file"));
        };
        if !file.regular {
            return Err(io::Error::other("the output is not a regular file"));
        }
        file.out.flush()?;
        let written = file.out.get_ref();
        // The output is open for writing only (a FIFO must not be opened
        // for reading too); /proc/self/fd opens the same file again.
        let read = File::open(format!("/proc/self/fd/{}", written.as_raw_fd()))?;
        work(&read, written, progress)
    }

    /// Flushes and closes: the file is synced, the socket shut down.
    pub fn finish(&mut self) -> io::Result<()> {
        self.flush()?;
        match self {
            // A device or FIFO cannot be synced; that is no failure.
            Sink::File(file) => match file.out.get_ref().sync_all() {
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
                other => other,
            },
            Sink::Socket { stream, .. } => stream.shutdown(Shutdown::Both),
            Sink::Memory(_) => Ok(()),
        }
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::File(file) => file.write(buf),
            Sink::Socket { out, .. } => out.write(buf),
            Sink::Memory(v) => v.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::File(file) => file.out.flush(),
            Sink::Socket { out, .. } => out.flush(),
            Sink::Memory(_) => Ok(()),
        }
    }
}

impl FileSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.written && !buf.is_empty() {
            if self.slow_first_write {
                std::thread::sleep(SLOW_WRITE);
            }
            if self.truncate_first {
                let file = self.out.get_ref();
                file.set_len(0)?;
                // An existing file of ours loses the read and write rights
                // of others it had, as a new one never gets them.
                private_files::make_private(file)?;
            }
            self.written = true;
        }
        let n = self.out.write(buf)?;
        self.position += n as u64;
        Ok(n)
    }
}
