//! File format writers: the byte layouts of the files fragfs makes (netCDF classic,
//! HDF5, TIFF, NumPy `.npy`, ENVI headers, Zarr metadata, Parquet, Arrow IPC, kerchunk
//! reference sets and the standard numcodecs encodings they name, and the pictures: PNG
//! quick looks, the SVG of the fragments), as `format/` is for the files it parses.
//!
//! Sans-IO like `format/`: a writer takes a description of what the file holds (shape,
//! types, names, attributes) and gives the header bytes and the byte map of where each
//! value goes. It knows no view, no fragment, no store: the faces of `view/` describe a
//! field, call a writer, and fill the values in from the reader. Each writer is tested
//! here alone, and against the tools that read its format in `tests/`.

pub mod arrow;
pub mod colormap;
pub mod envi;
pub mod flatbuf;
pub mod hdf5;
pub mod kerchunk;
pub mod netcdf;
pub mod npy;
pub mod numcodecs;
pub mod parquet;
pub mod picture;
pub mod png;
pub mod quicklook;
pub mod table;
pub mod thrift;
pub mod tiff;
pub mod value;
pub mod zarr;
