// The one translation unit that compiles stb_image and stb_image_resize (Debian's libstb-dev
// headers). Only PNG and JPEG are built in, so a file of any other format the library knows
// (GIF, PSD, HDR, ...) never reaches a decoder; images are decoded from memory only, and larger
// than 16384 pixels on a side is refused by stb itself as a last line behind the reader's own
// checks. Compiled without warnings (core/CMakeLists.txt): it is the library's code, not ours.
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#define STBI_FAILURE_USERMSG
#define STBI_MAX_DIMENSIONS 16384
#include <stb/stb_image.h>

#define STB_IMAGE_RESIZE_IMPLEMENTATION
#include <stb/stb_image_resize.h>
