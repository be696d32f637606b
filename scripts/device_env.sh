# Source this on a machine without aotrt's Debian build dependencies (the GPU
# machine): it unpacks the .deb files carried in .debs/ (fetched on a Debian 12
# machine with `scripts/fetch_debs.sh`) into .deps/root with dpkg -x - never
# into / - and points pkg-config, CMake and the loader at them.
_aotrt_root="$PWD/.deps/root"
if [ ! -d "$_aotrt_root/usr" ]; then
  mkdir -p "$_aotrt_root"
  for f in .debs/*.deb; do dpkg -x "$f" "$_aotrt_root"; done
fi
_aotrt_lib="$_aotrt_root/usr/lib/x86_64-linux-gnu"
export PKG_CONFIG_LIBDIR="$_aotrt_lib/pkgconfig:$_aotrt_lib/openblas-pthread/pkgconfig:$_aotrt_root/usr/share/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$_aotrt_root"
export CMAKE_PREFIX_PATH="$_aotrt_root/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export LD_LIBRARY_PATH="$_aotrt_lib:$_aotrt_lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
