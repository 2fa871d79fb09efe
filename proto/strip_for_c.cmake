# SPDX-License-Identifier: Apache-2.0
# Makes the copy of a schema that protoc-c compiles (cmake -P, IN= OUT=):
#  - service blocks are removed: protoc-c's service stubs do not fit gRPC C
#    core and `rpc Register` would become a C member named `register`;
#  - the proto3 `optional` label is dropped: protoc-c 1.4 refuses it, and for
#    a scalar field it changes only presence tracking, not the wire format.
# The schemas write every rpc with a trailing ';', so a service block holds no
# nested braces and one pattern removes it.
file(READ "${IN}" text)
string(REGEX REPLACE "service[ \t]+[A-Za-z0-9_]+[ \t\r\n]*{[^}]*}" "" text "${text}")
string(REGEX REPLACE "([ \t\n])optional[ \t]+" "\\1" text "${text}")
if(text MATCHES "service[ \t]+[A-Za-z0-9_]+[ \t\r\n]*{")
  message(FATAL_ERROR "${IN}: a service block survived stripping (rpc with an option block?)")
endif()
file(WRITE "${OUT}" "${text}")
