# SPDX-License-Identifier: Apache-2.0
"""The field-by-field schema check shared by test_proto_wire.py and
test_proto_dra.py: a generated module against a transcription of upstream."""


def check(tc, mod, package, messages, services):
    """messages: {name: [(field, number, type, label), ...] by number};
    services: {name: [(method, input, output, server_streaming), ...]}."""
    fd = mod.DESCRIPTOR
    tc.assertEqual(fd.package, package)
    tc.assertEqual(fd.syntax, "proto3")
    tc.assertEqual(set(fd.message_types_by_name), set(messages))
    for name, fields in messages.items():
        got = [(f.name, f.number, f.type, f.label) for f in fd.message_types_by_name[name].fields]
        tc.assertEqual(sorted(got, key=lambda t: t[1]), fields, name)
    tc.assertEqual(set(fd.services_by_name), set(services))
    for name, methods in services.items():
        svc = fd.services_by_name[name]
        tc.assertEqual(svc.full_name, package + "." + name)
        got = [(m.name, m.input_type.name, m.output_type.name, m.server_streaming)
               for m in svc.methods]
        tc.assertEqual(got, methods, name)
        tc.assertFalse(any(m.client_streaming for m in svc.methods))
