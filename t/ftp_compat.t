#!/usr/bin/perl

# ftp_compat.t -- command sequences as FileZilla and WinSCP send them,
# replayed on raw sockets (OPTS UTF8 ON, CLNT, FEAT parsing, MLSD -a,
# LIST -al, MLST of the working directory, PWD with doubled quotes, OPTS
# MLST, TYPE L 8 and L8, MDTM with a time, SITE and HELP SITE), and the
# bad-input list of issue 3: every command before login, CR, TAB and
# other control bytes inside an argument, each permission refused, too
# many invalid commands, and the per-address ban after failed logins.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use Test::Siftpd qw/port/;

$SIG{PIPE} = 'IGNORE';

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

mkdir "$d/data";
mkdir "$d/data/alice";
mkdir "$d/data/ro";

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
events { worker_connections 64; }
users %%TESTDIR%%/users;
login_max_failures 3;
login_ban_time 10m;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp {
    server {
        listen 127.0.0.1:%%PORT_8021%%;
        storage local;
        max_errors 5;
    }
}
EOF

for (['alice', 'pw-a', '/alice', 'all'], ['ro', 'pw-r', '/ro', 'list,download'])
{
    my ($u, $pw, $home, $perms) = @$_;
    open my $fh, '|-', $t->binary(), '-p', "$d/", '-c', "$d/siftpd.conf",
        'user', 'add', $u, '--home', $home, '--perms', $perms or die;
    print $fh "$pw\n";
    close $fh;
}

$t->write_file('data/alice/f.txt', "file\n");
$t->write_file('data/ro/r.txt', "read only\n");
mkdir "$d/data/ro/sub";

$t->run();
my $port = port(8021);
$t->wait_for(sub { scalar($t->workers()) == 1 }, 10);

sub ctl {
    my ($from) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
        LocalAddr => $from // '127.0.0.1', Timeout => 20) or die "$!";
    my $g = <$s>;
    return wantarray ? ($s, $g) : $s;
}

sub cmd {
    my ($s, $line) = @_;
    print $s "$line\r\n";
    my $r = '';
    while (defined(my $l = <$s>)) {
        $r .= $l;
        last if $l =~ /^\d{3} /;
    }
    return $r;
}

sub login {
    my ($u, $pw) = @_;
    my $s = ctl();
    cmd($s, "USER $u");
    my $r = cmd($s, "PASS $pw");
    die "login: $r" unless $r =~ /^230 /;
    return $s;
}

# a passive listing: EPSV, the command, the data, the end

sub listing {
    my ($s, $line) = @_;
    my ($p) = cmd($s, 'EPSV') =~ /\(\|\|\|(\d+)\|\)/ or return 'no EPSV';
    my $dc = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$p",
        Timeout => 20) or return 'no data connection';
    my $r = cmd($s, $line);
    return $r unless $r =~ /^150 /;
    my $data = '';
    while (sysread($dc, $data, 65536, length $data)) { }
    my $end = <$s>;
    return $end =~ /^226 / ? $data : "end: $end";
}

# every command before login: 530, except the pre-login set

# (530s count against max_errors: a new connection every 4 commands)

my $s = ctl();
my $help = cmd($s, 'HELP');
my @verbs = $help =~ /^ (.*)$/mg;
@verbs = map { split ' ' } @verbs;
my %pre = map { $_ => 1 }
    qw/USER PASS QUIT FEAT SYST OPTS HELP NOOP HOST CLNT AUTH PBSZ PROT CCC/;
my (@bad, $n);
for my $v (@verbs) {
    next if $pre{$v};
    if ($n++ % 4 == 0) {
        close $s;
        $s = ctl();
    }
    my $r = cmd($s, "$v x");
    push @bad, "$v: $r" unless $r =~ /^530 /;
}
ok(@verbs > 40, 'HELP lists the commands (' . scalar(@verbs) . ')');
is(join('', @bad), '', 'every post-login command before login: 530');
close $s;

# FileZilla: its login and first listing, as its log shows them

($s, my $g) = ctl();
like($g, qr/^220 /, 'greeting');
like(cmd($s, 'AUTH TLS'), qr/^502 /, 'AUTH TLS without TLS: 502');
like(cmd($s, 'AUTH SSL'), qr/^502 /, 'AUTH SSL: 502');
like(cmd($s, 'USER alice'), qr/^331 /, 'USER');
like(cmd($s, 'PASS pw-a'), qr/^230 /, 'PASS');
like(cmd($s, 'OPTS UTF8 ON'), qr/^200 /, 'OPTS UTF8 ON');
like(cmd($s, 'CLNT FileZilla 3.66.4'), qr/^200 /, 'CLNT');
like(cmd($s, 'SYST'), qr/^215 UNIX Type: L8\r$/m, 'SYST');

my $feat = cmd($s, 'FEAT');
like($feat, qr/\A211-[^\r\n]*\r\n( [^\r\n]+\r\n)+211 [^\r\n]*\r\n\z/,
    'FEAT: 211- first, each feature line starts with one space, 211 last');
for my $f ('UTF8', 'MLST type\*;size\*;modify\*;perm\*;unix.mode\*;', 'MFMT',
           'MDTM', 'SIZE', 'REST STREAM', 'EPSV', 'EPRT', 'CLNT', 'HOST',
           'TVFS')
{
    like($feat, qr/^ $f\r$/m, "FEAT lists $f");
}

like(cmd($s, 'PWD'), qr/^257 "\/" /, 'PWD');
like(cmd($s, 'TYPE I'), qr/^200 /, 'TYPE I');
my $mlsd = listing($s, 'MLSD');
like($mlsd, qr/^type=file;size=5;modify=\d{14};perm=[a-z]+;unix.mode=0644; f.txt\r$/m,
    'MLSD facts FileZilla parses');
like(listing($s, 'MLSD -a'), qr/ f.txt\r$/m, 'MLSD -a: the options are ignored');
like(listing($s, 'LIST -al'), qr/^-rw-r--r-- .* f.txt\r$/m, 'LIST -al');
like(listing($s, 'NLST -a'), qr/^f.txt\r$/m, 'NLST -a');

# names with quotes, spaces and UTF-8; PWD doubles the quotes

my $name = "say \"hi\" \x{e4}\x{263a}";
utf8::encode($name);
(my $q = $name) =~ s/"/""/g;
like(cmd($s, "MKD $name"), qr/^257 "\/\Q$q\E" created/, 'MKD, quotes doubled');
like(cmd($s, "CWD $name"), qr/^250 /, 'CWD into it');
like(cmd($s, 'PWD'), qr/^257 "\/\Q$q\E" is the current directory/,
    'PWD with embedded quotes doubled, UTF-8 as is');
like(cmd($s, 'MLST'), qr/^250-.*\r\n type=dir;.* \/\Q$name\E\r\n250 /,
    'MLST without an argument: the working directory');
like(cmd($s, 'MLST .'), qr/^250-.*\r\n type=dir;/, 'MLST .');
like(cmd($s, 'CDUP'), qr/^250 /, 'CDUP');
like(cmd($s, "RMD $name"), qr/^250 /, 'RMD');

# OPTS MLST selects facts; REIN brings them all back

like(cmd($s, 'OPTS MLST type;size;'), qr/^200 MLST OPTS type;size;\r$/m,
    'OPTS MLST type;size;');
like(cmd($s, 'MLST f.txt'), qr/^ type=file;size=5; \/f.txt\r$/m,
    'MLST has only those facts');
like(listing($s, 'MLSD'), qr/^type=file;size=5; f.txt\r$/m, 'and MLSD');
like(cmd($s, 'FEAT'), qr/^ MLST type\*;size\*;modify;perm;unix.mode;\r$/m,
    'FEAT stars the selected facts');
like(cmd($s, 'OPTS MLST size;nonsense;UNIX.MODE;'),
    qr/^200 MLST OPTS size;unix.mode;\r$/m,
    'OPTS MLST: unknown facts ignored, case ignored');
like(cmd($s, 'OPTS MLST'), qr/^200 MLST OPTS\r$/m, 'OPTS MLST: none');
like(cmd($s, 'MLST f.txt'), qr/^  \/f.txt\r$/m, 'MLST without facts');
like(cmd($s, 'OPTS MLSTX'), qr/^501 /, 'OPTS MLSTX: 501');

# TYPE variants, MFMT and the MDTM-with-a-time form, SITE

like(cmd($s, 'TYPE L 8'), qr/^200 .*Binary/, 'TYPE L 8');
like(cmd($s, 'TYPE L8'), qr/^200 .*Binary/, 'TYPE L8');
like(cmd($s, 'TYPE A N'), qr/^200 .*ASCII/, 'TYPE A N');
like(cmd($s, 'TYPE E'), qr/^504 /, 'TYPE E: 504');
like(cmd($s, 'MFMT 20200102030405 f.txt'), qr/^213 Modify=20200102030405; f.txt/,
    'MFMT');
like(cmd($s, 'MDTM 20210102030405 f.txt'), qr/^213 /, 'MDTM with a time sets it');
like(cmd($s, 'MDTM f.txt'), qr/^213 20210102030405\r/, 'MDTM reads it back');
like(cmd($s, 'SITE CHMOD 640 f.txt'), qr/^200 /, 'SITE CHMOD');
like(cmd($s, 'SITE HELP'), qr/^214-.*CHMOD/s, 'SITE HELP');
like(cmd($s, 'HELP SITE'), qr/^214-The following SITE commands/, 'HELP SITE');
like(cmd($s, 'SITE UMASK 022'), qr/^500 /, 'SITE UMASK: 500');
like(cmd($s, 'REIN'), qr/^220 /, 'REIN');
cmd($s, 'USER alice');
cmd($s, 'PASS pw-a');
like(cmd($s, 'FEAT'), qr/^ MLST type\*;size\*;modify\*;perm\*;unix.mode\*;\r$/m,
    'REIN: all facts again');
like(cmd($s, 'QUIT'), qr/^221 /, 'QUIT');
close $s;

# WinSCP: its start and an upload with times and mode

$s = login('alice', 'pw-a');
like(cmd($s, 'FEAT'), qr/^211 /m, 'FEAT');
like(cmd($s, 'CLNT WinSCP-6.3'), qr/^200 /, 'CLNT');
like(cmd($s, 'OPTS UTF8 ON'), qr/^200 /, 'OPTS UTF8 ON');
like(cmd($s, 'PWD'), qr/^257 /, 'PWD');
like(cmd($s, 'CWD /'), qr/^250 /, 'CWD /');
like(cmd($s, 'TYPE A'), qr/^200 /, 'TYPE A');
like(listing($s, 'LIST -a'), qr/ f.txt\r$/m, 'LIST -a');
like(cmd($s, 'TYPE I'), qr/^200 /, 'TYPE I');
like(cmd($s, 'SIZE f.txt'), qr/^213 5\r/, 'SIZE');
like(cmd($s, 'REST 0'), qr/^350 /, 'REST 0');
my ($p) = cmd($s, 'EPSV') =~ /\(\|\|\|(\d+)\|\)/;
my $dc = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$p", Timeout => 20);
like(cmd($s, 'STOR w.txt'), qr/^150 /, 'STOR after REST 0');
print $dc "winscp\n";
close $dc;
like(scalar <$s>, qr/^226 /, 'stored');
is($t->read_file('data/alice/w.txt'), "winscp\n", 'the bytes');
like(cmd($s, 'MFMT 20190101000000 w.txt'), qr/^213 /, 'MFMT');
like(cmd($s, 'SITE CHMOD 600 w.txt'), qr/^200 /, 'SITE CHMOD');
is((stat "$d/data/alice/w.txt")[9], 1546300800, 'time set');
like(cmd($s, 'MLST w.txt'), qr/unix.mode=0600;/, 'MLST shows the mode');
like(cmd($s, 'QUIT'), qr/^221 /, 'QUIT');
close $s;

# control bytes inside an argument

$s = login('alice', 'pw-a');
like(cmd($s, "CWD a\rb"), qr/^500 /, 'CR inside an argument: 500');
like(cmd($s, "MKD a\tb"), qr/^500 /, 'TAB inside an argument: 500');
like(cmd($s, "MKD a\x01b"), qr/^500 /, 'other control byte: 500');
like(cmd($s, 'NOOP'), qr/^200 /, 'the session goes on');
ok(!grep({ /a.b/ } glob("$d/data/alice/*")), 'nothing made');
print $s "MKD lf\nmade\r\n";
like(scalar <$s>, qr/^257 /, 'a LF inside ends the line: MKD lf');
like(scalar <$s>, qr/^500 /, '... and "made" is an unknown command');

# too many invalid commands (max_errors 5): 421 and closed

$s = login('alice', 'pw-a');
my $r = '';
for (1 .. 5) {
    $r .= cmd($s, 'XYZZY');
}
is(() = $r =~ /^500 /mg, 5, 'five invalid lines: five 500s');
like(scalar <$s>, qr/^421 Too many invalid commands/, 'max_errors: then 421');
is(scalar <$s>, undef, '... and closed');

# each permission refused for a list,download user

$s = login('ro', 'pw-r');
like(cmd($s, 'MKD x'), qr/^550 /, 'no mkdir: MKD 550');
like(cmd($s, 'RMD sub'), qr/^550 /, 'no rmdir: RMD 550');
like(cmd($s, 'DELE r.txt'), qr/^550 /, 'no delete: DELE 550');
cmd($s, 'RNFR r.txt');
like(cmd($s, 'RNTO r2.txt'), qr/^550 /, 'no rename: RNTO 550');
like(cmd($s, 'SITE CHMOD 600 r.txt'), qr/^550 /, 'no chmod: SITE CHMOD 550');
like(cmd($s, 'MFMT 20200101000000 r.txt'), qr/^550 /, 'MFMT 550');
for my $c ('STOR r.txt', 'STOR new.txt', 'APPE r.txt', 'STOU') {
    cmd($s, 'EPSV');
    like(cmd($s, $c), qr/^550 /, "no upload: $c 550");
}
ok(-e "$d/data/ro/r.txt" && -d "$d/data/ro/sub"
    && !-e "$d/data/ro/new.txt" && !-e "$d/data/ro/r2.txt",
    'nothing changed');
is($t->read_file('data/ro/r.txt'), "read only\n", 'r.txt as it was');
cmd($s, 'QUIT');

# the ban: 3 failed logins from 127.0.0.2, then it is refused at once;
# 127.0.0.1 is not

for (1 .. 3) {
    $s = ctl('127.0.0.2');
    cmd($s, 'USER alice');
    like(cmd($s, 'PASS wrong'), qr/^530 Login incorrect/,
        "failed login $_ from 127.0.0.2");
    close $s;
}

($s, $g) = ctl('127.0.0.2');
like($g, qr/^421 /, 'then 127.0.0.2 is banned: 421 at the greeting');
is(scalar <$s>, undef, '... and closed');

$s = login('alice', 'pw-a');
like(cmd($s, 'NOOP'), qr/^200 /, '127.0.0.1 still logs in');
cmd($s, 'QUIT');

like($t->read_file('error.log'), qr/address is banned/, 'the ban is logged');

$t->done();
