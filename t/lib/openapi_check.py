#!/usr/bin/python3

# openapi_check.py -- holds docs/openapi.json to what siftpd does, for
# t/http_api_openapi.t: the routes the C sources register against the
# document's paths and methods, both ways, then live requests (good and
# bad) whose status must be one the document lists for the operation and
# whose body must match that status's schema.  A small JSON Schema walker
# of its own (type, enum, properties, required, additionalProperties,
# items, minimum, maximum, $ref): no module beyond the standard library.
# Prints "ok WHAT" or "not ok WHAT: WHY", one line a check.
#
# usage: openapi_check.py SRCDIR DOC BASE ADMIN READER CASES
#   CASES: a JSON file, [[method, path, token, body, status], ...]; token
#   "admin", "read" or null; body a string sent as it is, or null

import glob
import http.client
import json
import re
import sys
import urllib.parse

srcdir, docfile, base, admin, reader, casefile = sys.argv[1:7]

with open(docfile) as f:
    doc = json.load(f)


def check(ok, what, why=''):
    print(('ok ' if ok else 'not ok ') + what + ('' if ok else ': ' + why))
    sys.stdout.flush()


# the routes of the sources: sft_http_add_route(cf, PATH, METHODS, ...)
# and the tables' sft_http_api_route(PATH, METHODS, ...), PATH string
# literals and macros of the file

METHODS = {'GET': 'get', 'POST': 'post', 'PUT': 'put', 'PATCH': 'patch',
           'DELETE': 'delete'}


def routes():
    found = set()
    for name in sorted(glob.glob(srcdir + '/src/http/*.c')):
        text = open(name).read()
        macros = dict(re.findall(r'#define\s+(\w+)\s+("[^"]*")', text))
        for m in re.finditer(r'(?:sft_http_add_route\(\s*cf,|'
                             r'sft_http_api_route\()\s*([^,]+),'
                             r'\s*([^,]+),', text):
            expr, meth = m.group(1), m.group(2)
            parts = re.findall(r'"[^"]*"|\w+', expr)
            if not parts or any(p[0] != '"' and p not in macros
                                for p in parts):
                continue            # a path made at run time: static files
            path = ''.join((p if p[0] == '"' else macros[p])[1:-1]
                           for p in parts)
            for bit in re.findall(r'SFT_HTTP_(\w+)', meth):
                if bit != 'HEAD':
                    found.add((METHODS[bit], path))
    return found


served = routes()
documented = set()
for path, item in doc['paths'].items():
    for meth in item:
        if meth in METHODS.values():
            documented.add((meth, re.sub(r'\{[^}]+\}', '*', path)))

check(len(served) >= 15, 'the sources register the API routes',
      '%d found' % len(served))
for m, p in sorted(served - documented):
    check(False, 'route %s %s documented' % (m.upper(), p), 'missing')
for m, p in sorted(documented - served):
    check(False, 'documented %s %s served' % (m.upper(), p), 'not served')
check(served == documented, 'every route served is documented, and '
      'every documented one served')


# the schema walker

def resolve(s):
    while '$ref' in s:
        node = doc
        for k in s['$ref'][2:].split('/'):
            node = node[k]
        s = node
    return s


TYPES = {'object': dict, 'array': list, 'string': str, 'boolean': bool,
         'null': type(None)}


def is_type(v, t):
    if t == 'integer':
        return isinstance(v, int) and not isinstance(v, bool)
    if t == 'number':
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    return isinstance(v, TYPES[t])


def errors(s, v, at='$'):
    s = resolve(s)
    if 'type' in s:
        types = s['type'] if isinstance(s['type'], list) else [s['type']]
        if not any(is_type(v, t) for t in types):
            return ['%s: %r is not %s' % (at, v, '|'.join(types))]
    if 'enum' in s and v not in s['enum']:
        return ['%s: %r not in %r' % (at, v, s['enum'])]
    out = []
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if 'minimum' in s and v < s['minimum']:
            out.append('%s: %r < %r' % (at, v, s['minimum']))
        if 'maximum' in s and v > s['maximum']:
            out.append('%s: %r > %r' % (at, v, s['maximum']))
    if isinstance(v, dict):
        props = s.get('properties', {})
        for k in s.get('required', []):
            if k not in v:
                out.append('%s: no "%s"' % (at, k))
        extra = s.get('additionalProperties', True)
        for k, x in v.items():
            if k in props:
                out += errors(props[k], x, at + '.' + k)
            elif extra is False:
                out.append('%s: unknown "%s"' % (at, k))
            elif isinstance(extra, dict):
                out += errors(extra, x, at + '.' + k)
    if isinstance(v, list) and 'items' in s:
        for i, x in enumerate(v):
            out += errors(s['items'], x, '%s[%d]' % (at, i))
    return out


# which documented operation a request is; for a method the path does
# not have, what is answered before the route (401, 403, 429) or 405,
# as any operation of the path documents them

BEFORE = ('401', '403', '405', '429')


def operation(method, path):
    path = urllib.parse.urlsplit(path).path
    segs = path.split('/')
    for p, item in doc['paths'].items():
        ps = p.split('/')
        if len(ps) == len(segs) and all(
                a == b or (a.startswith('{') and b) for a, b in
                zip(ps, segs)):
            if method.lower() in item:
                return item[method.lower()]
            any_op = [v for k, v in item.items() if k in METHODS.values()]
            return {'responses': {k: v for k, v in
                                  any_op[0]['responses'].items()
                                  if k in BEFORE}}
    return None


def request(method, path, token, body):
    u = urllib.parse.urlsplit(base)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    h = {}
    if token:
        h['Authorization'] = 'Bearer ' + (admin if token == 'admin'
                                          else reader)
    if body is not None:
        h['Content-Type'] = 'application/json'
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, r.getheader('Content-Type') or '', data


with open(casefile) as f:
    cases = json.load(f)

for method, path, token, body, want in cases:
    what = '%s %s%s' % (method, path, '' if token else ' (no token)')
    status, ctype, data = request(method, path, token, body)
    op = operation(method, path)

    if status != want:
        check(False, what, 'status %d, not %d: %r' % (status, want,
                                                      data[:200]))
        continue

    if op is None:
        check(False, what, 'not in the document')
        continue

    resp = op['responses'].get(str(status))
    if resp is None:
        check(False, what, 'status %d not documented' % status)
        continue

    resp = resolve(resp)
    content = resp.get('content')

    if content is None:
        check(len(data) == 0, what + ': ' + str(status) + ' without a body',
              'a body: %r' % data[:200])
        continue

    media = ctype.split(';')[0].strip()
    if media not in content:
        check(False, what, 'Content-Type %r not documented' % ctype)
        continue

    if media != 'application/json':
        check(len(data) > 0, '%s: %d %s' % (what, status, media), 'empty')
        continue

    try:
        v = json.loads(data)
    except ValueError as e:
        check(False, what, 'not JSON: %s' % e)
        continue

    e = errors(content[media]['schema'], v)
    check(not e, '%s: %d matches its schema' % (what, status),
          '; '.join(e[:5]))
