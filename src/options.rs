//! The HPROF option string -> [`Options`]. (Being implemented.)
