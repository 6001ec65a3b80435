//! Class-file rewriting for `cpu=times`/`cpu=old`: pure, bytes in, bytes out.
//! (Being implemented.)
