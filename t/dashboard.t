#!/usr/bin/perl

# dashboard.t -- the dashboard of html/ in headless Chromium, driven with
# puppeteer-core (t/dashboard/driver.js, one step a run) as an operator
# drives it: a wrong token refused, sign-in with an admin token, a user
# created from the page logs in over FTP and SFTP (ftplib, paramiko), the
# overview's chart counts their bytes, a bad value answered next to its
# field, a quota changed from the page as the API then shows it, a change
# from a stale form refused with the 412 message, disable (FTP refuses the
# login) and delete with the page's confirmation; the user's FTP and SFTP
# sessions listed and the SFTP one ended from the page (paramiko sees it
# closed, FTP goes on), a ban earned from 127.0.0.2 listed and lifted (it
# logs in again), the server's version and modules, a reload that works,
# one that fails with the configuration's FILE:LINE and one that works
# again, the server serving meanwhile; a read token sees no write button
# (End session, Lift and Reload included); the list filtered and paged; no
# exception or unexpected error in the console; a token revoked by a
# reload signs the page out.  Screenshots go to
# TEST_SIFTPD_OBJS/dashboard/ (default objs/dashboard/).

use warnings;
use strict;
use utf8;

use lib 't/lib';
use Test::More;
use File::Path qw/make_path/;
use File::Spec;
use HTTP::Tiny;
use IO::Handle;
use IO::Select;
use IPC::Open2;
use JSON::PP;
use POSIX qw/:sys_wait_h/;
use Time::HiRes qw/sleep time/;
use Test::Siftpd qw/port/;

my ($chromium) = grep { -x } map { "/usr/bin/$_" }
    qw/chromium chromium-browser/;
plan(skip_all => 'no Chromium in /usr/bin (auto/deps --test installs it)')
    unless $chromium;

my $t = Test::Siftpd->new()->has('http')->has('ftp')->has('sftp');
my $d = $t->testdir();

# the rest is needed: missing, the test fails and says what to install

system('node -e 0') == 0
    or die "no node: auto/deps --test installs nodejs and npm\n";
system('/usr/bin/python3 -c "import ftplib, paramiko"') == 0
    or die "no python3 with paramiko: auto/deps --test installs them\n";

my $objs = $ENV{TEST_SIFTPD_OBJS} || 'objs';
{
    local %ENV = %ENV;
    delete @ENV{qw/MAKEFLAGS MAKELEVEL MFLAGS/};
    my $out = `make -s -f $objs/Makefile test-deps 2>&1`;
    die "puppeteer-core could not be installed into $objs/node_modules:\n"
        . $out if $?;
}
$ENV{NODE_PATH} = File::Spec->rel2abs("$objs/node_modules");

my $driver = File::Spec->rel2abs('t/dashboard/driver.js');
my $html = File::Spec->rel2abs('html');
my $shots = File::Spec->rel2abs("$objs/dashboard");
make_path($shots);

my $admin = 'admin-token-0123456789abcdef';
my $reader = 'read-token-0123456789abcdef';

$t->write_file('tokens', "$admin admin ops\n$reader read viewer\n");
$t->write_file('users', '');
mkdir "$d/data";
mkdir "$d/data/web1";

$t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 2;
events { worker_connections 64; }
users %%TESTDIR%%/users;
login_max_failures 3;
login_ban_exempt 127.0.0.1/32;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp { server { listen 127.0.0.1:%%PORT_8021%%; storage local; } }
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/ssh/host_ed25519_key;
        storage local;
    }
}
http {
    html_root $html;
    server {
        listen 127.0.0.1:%%PORT_8080%%;
        api_token_file tokens;
    }
}
EOF

$t->run();

my $url = 'http://127.0.0.1:' . port(8080);
my $http = HTTP::Tiny->new(timeout => 30, keep_alive => 0);

sub api {
    my ($method, $path, $body) = @_;
    my $r = $http->request($method, "$url/api/v1$path", {
        headers => { Authorization => "Bearer $admin",
                     'Content-Type' => 'application/json' },
        defined $body ? (content => encode_json($body)) : () });
    $r->{json} = eval { decode_json($r->{content}) } if length $r->{content};
    return $r;
}

# Chromium of our own: a fresh profile in the test directory, in a process
# group of its own so that its helpers end with it

my $owner = $$;
my $chrome = fork() // die "fork: $!";
if ($chrome == 0) {
    setpgrp(0, 0);
    open STDOUT, '>', "$d/chromium.log" or die;
    open STDERR, '>&', \*STDOUT or die;
    exec $chromium, '--headless=new', '--no-sandbox', '--disable-gpu',
        '--no-first-run', '--no-default-browser-check',
        "--user-data-dir=$d/chromium", '--remote-debugging-port=0',
        'about:blank' or POSIX::_exit(127);
}

# a test stopped by a signal still ends Chromium (and siftpd) by their pids
$SIG{$_} = sub { exit 1 } for qw/INT TERM HUP PIPE/;

END {
    local $?;
    if ($chrome && $$ == $owner) {
        kill 'TERM', -$chrome;
        my $end = time() + 10;
        sleep 0.1 while waitpid($chrome, WNOHANG) == 0 && time() < $end;
        kill 'KILL', -$chrome if kill 0, $chrome;
        waitpid($chrome, 0);
    }
}

$t->wait_for(sub { -s "$d/chromium/DevToolsActivePort" }, 30)
    or die "Chromium did not start:\n" . $t->read_file('chromium.log');
my ($dport, $dpath) = split /\n/, $t->read_file('chromium/DevToolsActivePort');
my $ws = "ws://127.0.0.1:$dport$dpath";

# one step of the driver: what the page showed, as a hash
sub step {
    my (@args) = @_;

    my $pid = open(my $fh, '-|') // die "fork: $!";
    if ($pid == 0) {
        open STDERR, '>>', "$d/driver.log";
        exec('timeout', '60', 'node', $driver, $ws, @args)
            or POSIX::_exit(127);
    }
    my @out = <$fh>;
    close $fh;

    my $r = eval { decode_json($out[-1] // '') }
        // { error => "no answer from the driver: @out" };
    diag("$args[0]: $r->{error}") if $r->{error};
    return $r;
}

# FTP and SFTP sessions of a user: login, upload and download

$t->write_file('clients.py', <<'PY');
import ftplib, io, sys, paramiko
port_ftp, port_sftp, user, password = sys.argv[1:5]
data = b'siftp dashboard ' * 16384
def check(what, cond, why=''):
    print(('ok ' if cond else 'not ok ') + what
          + ('' if cond else ': ' + str(why)))
try:
    f = ftplib.FTP()
    f.connect('127.0.0.1', int(port_ftp), timeout=15)
    f.login(user, password)
    f.storbinary('STOR ftp.bin', io.BytesIO(data))
    got = io.BytesIO()
    f.retrbinary('RETR ftp.bin', got.write)
    check('FTP: the user made on the page logs in and transfers',
          got.getvalue() == data)
    f.quit()
except Exception as e:
    check('FTP: the user made on the page logs in and transfers', False, e)
try:
    tr = paramiko.Transport(('127.0.0.1', int(port_sftp)))
    tr.connect(username=user, password=password)
    s = paramiko.SFTPClient.from_transport(tr)
    with s.open('sftp.bin', 'w') as fh:
        fh.write(data)
    with s.open('sftp.bin', 'r') as fh:
        check('SFTP: the user logs in and transfers', fh.read() == data)
    tr.close()
except Exception as e:
    check('SFTP: the user logs in and transfers', False, e)
PY

# sign-in

my $r = step('open', "$url/");
ok($r->{signin}, 'with a token file the page asks for a token');

$r = step('signin', 'wrong-token-0123456789abcdef');
like($r->{signin_error}, qr/refused \(401\)/,
    'a wrong token: the 401 is shown');
is($r->{scope}, 'none', 'and nothing else');

$r = step('signin', $admin);
is($r->{scope}, 'admin', 'signed in with the admin token');
is($r->{stored}, $admin, 'the token is kept in the tab\'s sessionStorage');
is($r->{status}, 'live', 'the stats are polled');
like($r->{version}, qr/^version \d+\.\d+/, 'the version in the header');
ok(!step('open', "$url/")->{signin},
    'a reload of the page keeps the tab signed in');

# a user made from the page

$r = step('create', 'web1', 'web1-pw-1', 'list,download,upload');
is($r->{message}, 'User web1 saved.', 'create: saved') or diag(explain($r));
like($r->{row} // '', qr/^web1\/web1/, 'create: the user in the list');

$r = api('GET', '/users/web1');
is($r->{status}, 200, 'create: the API has the user');
is_deeply([ @{ $r->{json} }{qw/home password/} ], [ '/web1', JSON::PP::true ],
    'with the home and a password');
is_deeply($r->{json}{rules},
    [ { path => '/', perms => 'list,download,upload' } ],
    'and the permissions');

$r = step('invalid', 'quota_bytes', '-5');
is($r->{field_errors}{quota_bytes}, 'a negative value',
    'a 422 is shown next to its field');
is($r->{form_error}, '', 'and nowhere else');

my ($n, $out) = $t->python_checks('clients.py', port(8021), port(8022),
    'web1', 'web1-pw-1');
is($n, 2, 'both clients ran') or diag($out);

$r = step('chart', 2 * 16 * 16384, 'ftp', 'sftp');
cmp_ok($r->{bytesFtp} // 0, '>=', 2 * 16 * 16384,
    'the chart counted the FTP transfers\' bytes');
cmp_ok($r->{bytesSftp} // 0, '>=', 2 * 16 * 16384, 'and the SFTP ones');
cmp_ok($r->{samples} // 0, '>', 0, 'over samples of the throughput');
like($r->{legend} // '', qr/FTP: .* since the page opened/, 'with a legend');
cmp_ok($r->{transfers} // 0, '>=', 2, 'transfers by data path listed');
like($r->{pool} // '', qr{^\d+ / \d+$}, 'the buffer pool\'s chunks in use shown');
is($r->{reserved}, '0', 'and those S3 upload parts reserved (none here)');
step('screenshot', "$shots/overview.png");

# a change from the page, as the API then shows it

$r = step('edit', 'web1');
is($r->{quota_bytes}, '', 'the form is filled from the API');
$r = step('save', 'quota_bytes', '5000000');
is($r->{message}, 'User web1 saved.', 'quota changed from the page');
is(api('GET', '/users/web1')->{json}{quota_bytes}, 5000000,
    'the API has the new quota');

# a change from a form loaded before another change: 412

$r = step('edit', 'web1');
is($r->{quota_bytes}, '5000000', 'the form loaded again');
is(api('PATCH', '/users/web1', { quota_files => 3 })->{status}, 200,
    'meanwhile the user is changed through the API');
$r = step('save', 'quota_bytes', '6000000');
like($r->{form_error}, qr/changed since you loaded it/,
    'the page says the user changed since it was loaded');
ok($r->{reload_button}, 'and offers to reload it');
is(api('GET', '/users/web1')->{json}{quota_bytes}, 5000000,
    'the stale change was not made');
step('screenshot', "$shots/conflict.png");
$r = step('reload');
is($r->{quota_files}, '3', 'Reload shows the other change');
is(step('save', 'quota_bytes', '6000000')->{message}, 'User web1 saved.',
    'and the change is made on it');
is(api('GET', '/users/web1')->{json}{quota_bytes}, 6000000,
    'as the API shows');

# the list: filtered by the start of a name, 20 a page

is(api('POST', '/users', { name => sprintf('page%02d', $_) })->{status}, 201,
    "a user made through the API ($_)") for 1 .. 22;
$r = step('filter', 'page');
is($r->{page}, '1–20 of 22', 'the filter: the first page of its users');
is(scalar @{ $r->{names} // [] }, 20, 'with 20 rows');
$r = step('next');
is($r->{page}, '21–22 of 22', 'Next: the rest');
is_deeply($r->{names}, [ 'page21', 'page22' ], 'in name order');
$r = step('filter', 'web');
is_deeply($r->{names}, [ 'web1' ], 'another filter');

# sessions held open by the user: FTP (ftplib) and SFTP (paramiko), asked
# over a pipe whether they still work

$t->write_file('hold.py', <<'PY');
import ftplib, sys, time, paramiko
port_ftp, port_sftp, user, password = sys.argv[1:5]
def say(what):
    print(what)
    sys.stdout.flush()
try:
    f = ftplib.FTP()
    f.connect('127.0.0.1', int(port_ftp), timeout=15)
    f.login(user, password)
    tr = paramiko.Transport(('127.0.0.1', int(port_sftp)))
    tr.banner_timeout = 15
    tr.connect(username=user, password=password)
    s = paramiko.SFTPClient.from_transport(tr)
    s.get_channel().settimeout(15)
    s.listdir('.')
    say('ready')
except Exception as e:
    say('error ' + repr(e))
    sys.exit(1)
for line in sys.stdin:
    try:
        if line.strip() == 'ftp':
            f.voidcmd('NOOP')
            say('alive')
        else:
            # the disconnect the server sent, then a request that fails
            end = time.time() + 15
            while tr.is_active() and time.time() < end:
                time.sleep(0.05)
            active = tr.is_active()
            s.listdir('.')
            say('alive, transport active: %s' % active)
    except Exception as e:
        say('closed, transport active: %s' % tr.is_active())
PY

my $hold = open2(my $hout, my $hin, 'timeout', '600', '/usr/bin/python3',
    "$d/hold.py", port(8021), port(8022), 'web1', 'web1-pw-1');
$hin->autoflush(1);
my $held = IO::Select->new($hout);

END {
    local $?;
    if ($hold && $$ == $owner) {
        kill 'TERM', $hold;
        waitpid($hold, 0);
    }
}

# a question to the held sessions, or none: the answer line
sub hold {
    my ($what) = @_;
    print $hin "$what\n" if defined $what;
    return 'no answer' unless $held->can_read(40);
    my $l = <$hout> // 'no answer';
    chomp $l;
    return $l;
}

is(hold(), 'ready', 'FTP and SFTP sessions of web1 held open');

$r = step('sessions', 'ftp', 'sftp');
my %s = map { $_->[0] => $_ } @{ $r->{rows} // [] };
like(join('|', @{ $s{ftp} // [] }), qr/^ftp\|web1\|127\.0\.0\.1 port \d+\|/,
    'sessions: the FTP one with its user and address');
like(join('|', @{ $s{sftp} // [] }),
    qr/^sftp\|web1\|127\.0\.0\.1 port \d+\|.*\|$/,
    'and the SFTP one, without a transfer');
step('screenshot', "$shots/sessions.png");

$r = step('end', 'sftp');
like($r->{question}, qr/^End the sftp session of web1\?/,
    'End session asks first');
like($r->{message}, qr/^Session \S+: ended\.$/, 'ended from the page');
is_deeply([ map { $_->[0] } @{ $r->{rows} // [] } ], [ 'ftp' ],
    'the FTP session is still listed');
is(hold('sftp'), 'closed, transport active: False',
    'paramiko saw its session closed');
is(hold('ftp'), 'alive', 'the FTP session goes on');

# a ban earned from a second loopback address, lifted from the page

$t->write_file('from2.py', <<'PY');
import ftplib, sys
port, user, password, what = sys.argv[1:5]
def login(pw):
    f = ftplib.FTP(timeout=20, source_address=('127.0.0.2', 0))
    try:
        f.connect('127.0.0.1', int(port))
        f.login(user, pw)
        f.quit()
        return '230'
    except ftplib.all_errors as e:
        return str(e)[:3]
if what == 'ban':
    for i in range(3):
        code = login('wrong')
        print(('ok ' if code == '530' else 'not ok ')
              + '127.0.0.2: wrong password %d refused (%s)' % (i + 1, code))
    code = login(password)
    print(('ok ' if code == '421' else 'not ok ')
          + '127.0.0.2: banned after 3 (%s)' % code)
else:
    code = login(password)
    print(('ok ' if code == '230' else 'not ok ')
          + '127.0.0.2: logs in again (%s)' % code)
PY

($n, $out) = $t->python_checks('from2.py', port(8021), 'web1', 'web1-pw-1',
    'ban');
is($n, 4, 'the logins from 127.0.0.2 ran') or diag($out);

$r = step('bans', '127.0.0.2');
is_deeply([ map { [ @$_[0, 1] ] } @{ $r->{rows} // [] } ],
    [ [ '127.0.0.2', '3' ] ], 'bans: the address with its failures');
step('screenshot', "$shots/bans.png");

# the server and its reload

$r = step('server');
like($r->{version} // '', qr/^\d+\.\d+/, 'server: the version');
like($r->{modules} // '', qr/\bsft_http_api_module\b/,
    'and the modules');
is($r->{workers}, '2', 'and the workers');
step('screenshot', "$shots/server.png");

$r = step('reconfigure');
is_deeply($r, { text => 'Reloaded.', class => 'notice' },
    'Reload: the configuration loaded');

my $conf = $t->read_file('siftpd.conf');
my $bad = 1 + ($conf =~ tr/\n//);
$t->write_file('siftpd.conf', "${conf}bogus_directive on;\n");
$r = step('reconfigure');
like($r->{text} // '',
    qr/^\Q$d\E\/siftpd\.conf:$bad: unknown directive "bogus_directive"$/,
    'a broken configuration: its file, line and error shown');
is($r->{class}, 'error', 'as an error');
step('screenshot', "$shots/reload.png");
is(hold('ftp'), 'alive', 'the server serves on');
is($t->ftp_login(port(8021), 'web1', 'web1-pw-1'), 'ok',
    'and takes new logins');

$t->write_file('siftpd.conf', $conf);
is(step('reconfigure')->{text}, 'Reloaded.', 'fixed: Reload works again');

# a read token: the session, the ban and the reload without their buttons

step('signout');
is(step('signin', $reader)->{scope}, 'read', 'signed in with a read token');
$r = step('controls');
is($r->{rows}, 3, 'a read token sees the session, the ban and the reload');
is($r->{buttons}, 3, 'the page has their End session, Lift and Reload');
is($r->{visible}, 0, 'none of which a read token sees');
step('screenshot', "$shots/read-panels.png");
step('signout');
step('signin', $admin);

$r = step('lift', '127.0.0.2');
is($r->{message}, 'Ban of 127.0.0.2: lifted.', 'Lift: the ban lifted');
is_deeply($r->{rows}, [], 'and gone from the list');
($n, $out) = $t->python_checks('from2.py', port(8021), 'web1', 'web1-pw-1',
    'login');
is($n, 1, 'a login from 127.0.0.2 ran') or diag($out);

close $hin;
is(hold(), 'no answer', 'the held sessions end');
waitpid($hold, 0);
$hold = 0;

# disable

$r = step('disable', 'web1');
is($r->{message}, 'User web1 disabled.', 'disabled from the page');
is(api('GET', '/users/web1')->{json}{disabled}, JSON::PP::true,
    'the API shows it disabled');
is($t->ftp_login(port(8021), 'web1', 'web1-pw-1'), '530',
    'a new FTP login is refused');

# a read token

$r = step('signout');
is($r->{stored}, undef, 'signed out: the token is gone from the tab');
ok(!$r->{tabs}, 'and the panels with it');
ok(!$r->{editor}, 'and the user form it had open');

$r = step('signin', $reader);
is($r->{scope}, 'read', 'signed in with a read token');
$r = step('buttons');
cmp_ok($r->{rows}, '>=', 1, 'a read token sees the users');
cmp_ok($r->{write}, '>', 0, 'the page has write buttons');
is($r->{visible}, 0, 'none of which a read token sees');
step('screenshot', "$shots/read.png");

# delete

step('signout');
step('signin', $admin);

$r = step('remove', 'web1');
like($r->{question}, qr/Delete the user web1\?/, 'delete asks first');
is($r->{message}, 'User web1 deleted.', 'deleted from the page');
is(api('GET', '/users/web1')->{status}, 404, 'the API has no such user');
is($t->ftp_login(port(8021), 'web1', 'web1-pw-1'), '530',
    'and FTP refuses it');

$r = step('console');
is_deeply($r->{exceptions}, [], 'no exception in the page\'s scripts');
# the answers the page expects: the wrong token (401), the reload probe
# (405) and the refusals the test provoked (412, 422: a bad value and a
# broken configuration); no 403: the scope is asked, not probed with a
# write
is_deeply([ grep { !/^Failed to load resource: .* status of (40[15]|412|422) /
                 } @{ $r->{errors} // [] } ], [],
    'no error in its console but the answers it expects');

# the admin token revoked by a reload: the page signs out and says why

$t->write_file('tokens', "$reader read viewer\n");
$t->reload();
$r = step('refused');
like($r->{signin_error}, qr/refused \(401\)/,
    'a token revoked meanwhile signs the page out with the 401');
is($r->{stored}, undef, 'and forgets it');

unlike($t->read_file('error.log'), qr/web1-pw/, 'no password in the log');

$t->done();
