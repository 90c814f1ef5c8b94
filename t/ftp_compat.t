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
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_conf ftp_user ftp_connect ftp_cmd ftp_login
                          ftp_passive/;

$SIG{PIPE} = 'IGNORE';

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

ftp_conf($t, main => "login_max_failures 3;\nlogin_ban_time 10m;",
    server => 'max_errors 5;');
ftp_user($t, 'alice', 'pw-a', 'all');
ftp_user($t, 'ro', 'pw-r', 'list,download');

$t->write_file('data/alice/f.txt', "file\n");
$t->write_file('data/ro/r.txt', "read only\n");
mkdir "$d/data/ro/sub";

$t->run();
my $port = port(8021);
$t->wait_for(sub { scalar($t->workers()) == 1 }, 10);

sub ctl { ftp_connect($port, @_) }
sub login { ftp_login($port, @_) }

# every command before login: 530, except the pre-login set

# (530s count against max_errors: a new connection every 4 commands)

my $s = ctl();
my $help = ftp_cmd($s, 'HELP');
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
    my $r = ftp_cmd($s, "$v x");
    push @bad, "$v: $r" unless $r =~ /^530 /;
}
ok(@verbs > 40, 'HELP lists the commands (' . scalar(@verbs) . ')');
is(join('', @bad), '', 'every post-login command before login: 530');
close $s;

# FileZilla: its login and first listing, as its log shows them

($s, my $g) = ctl();
like($g, qr/^220 /, 'greeting');
like(ftp_cmd($s, 'AUTH TLS'), qr/^502 /, 'AUTH TLS without TLS: 502');
like(ftp_cmd($s, 'AUTH SSL'), qr/^502 /, 'AUTH SSL: 502');
like(ftp_cmd($s, 'USER alice'), qr/^331 /, 'USER');
like(ftp_cmd($s, 'PASS pw-a'), qr/^230 /, 'PASS');
like(ftp_cmd($s, 'OPTS UTF8 ON'), qr/^200 /, 'OPTS UTF8 ON');
like(ftp_cmd($s, 'CLNT FileZilla 3.66.4'), qr/^200 /, 'CLNT');
like(ftp_cmd($s, 'SYST'), qr/^215 UNIX Type: L8\r$/m, 'SYST');

my $feat = ftp_cmd($s, 'FEAT');
like($feat, qr/\A211-[^\r\n]*\r\n( [^\r\n]+\r\n)+211 [^\r\n]*\r\n\z/,
    'FEAT: 211- first, each feature line starts with one space, 211 last');
for my $f ('UTF8', 'MLST type\*;size\*;modify\*;perm\*;unix.mode\*;', 'MFMT',
           'MDTM', 'SIZE', 'REST STREAM', 'EPSV', 'EPRT', 'CLNT', 'HOST',
           'TVFS')
{
    like($feat, qr/^ $f\r$/m, "FEAT lists $f");
}

like(ftp_cmd($s, 'PWD'), qr/^257 "\/" /, 'PWD');
like(ftp_cmd($s, 'TYPE I'), qr/^200 /, 'TYPE I');
my $mlsd = ftp_passive($s, 'MLSD');
like($mlsd, qr/^type=file;size=5;modify=\d{14};perm=[a-z]+;unix.mode=0644; f.txt\r$/m,
    'MLSD facts FileZilla parses');
like(ftp_passive($s, 'MLSD -a'), qr/ f.txt\r$/m, 'MLSD -a: the options are ignored');
like(ftp_passive($s, 'LIST -al'), qr/^-rw-r--r-- .* f.txt\r$/m, 'LIST -al');
like(ftp_passive($s, 'NLST -a'), qr/^f.txt\r$/m, 'NLST -a');

# names with quotes, spaces and UTF-8; PWD doubles the quotes

my $name = "say \"hi\" \x{e4}\x{263a}";
utf8::encode($name);
(my $q = $name) =~ s/"/""/g;
like(ftp_cmd($s, "MKD $name"), qr/^257 "\/\Q$q\E" created/, 'MKD, quotes doubled');
like(ftp_cmd($s, "CWD $name"), qr/^250 /, 'CWD into it');
like(ftp_cmd($s, 'PWD'), qr/^257 "\/\Q$q\E" is the current directory/,
    'PWD with embedded quotes doubled, UTF-8 as is');
like(ftp_cmd($s, 'MLST'), qr/^250-.*\r\n type=dir;.* \/\Q$name\E\r\n250 /,
    'MLST without an argument: the working directory');
like(ftp_cmd($s, 'MLST .'), qr/^250-.*\r\n type=dir;/, 'MLST .');
like(ftp_cmd($s, 'CDUP'), qr/^250 /, 'CDUP');
like(ftp_cmd($s, "RMD $name"), qr/^250 /, 'RMD');

# OPTS MLST selects facts; REIN brings them all back

like(ftp_cmd($s, 'OPTS MLST type;size;'), qr/^200 MLST OPTS type;size;\r$/m,
    'OPTS MLST type;size;');
like(ftp_cmd($s, 'MLST f.txt'), qr/^ type=file;size=5; \/f.txt\r$/m,
    'MLST has only those facts');
like(ftp_passive($s, 'MLSD'), qr/^type=file;size=5; f.txt\r$/m, 'and MLSD');
like(ftp_cmd($s, 'FEAT'), qr/^ MLST type\*;size\*;modify;perm;unix.mode;\r$/m,
    'FEAT stars the selected facts');
like(ftp_cmd($s, 'OPTS MLST size;nonsense;UNIX.MODE;'),
    qr/^200 MLST OPTS size;unix.mode;\r$/m,
    'OPTS MLST: unknown facts ignored, case ignored');
like(ftp_cmd($s, 'OPTS MLST'), qr/^200 MLST OPTS\r$/m, 'OPTS MLST: none');
like(ftp_cmd($s, 'MLST f.txt'), qr/^  \/f.txt\r$/m, 'MLST without facts');
like(ftp_cmd($s, 'OPTS MLSTX'), qr/^501 /, 'OPTS MLSTX: 501');

# TYPE variants, MFMT and the MDTM-with-a-time form, SITE

like(ftp_cmd($s, 'TYPE L 8'), qr/^200 .*Binary/, 'TYPE L 8');
like(ftp_cmd($s, 'TYPE L8'), qr/^200 .*Binary/, 'TYPE L8');
like(ftp_cmd($s, 'TYPE A N'), qr/^200 .*ASCII/, 'TYPE A N');
like(ftp_cmd($s, 'TYPE E'), qr/^504 /, 'TYPE E: 504');
like(ftp_cmd($s, 'MFMT 20200102030405 f.txt'), qr/^213 Modify=20200102030405; f.txt/,
    'MFMT');
like(ftp_cmd($s, 'MDTM 20210102030405 f.txt'), qr/^213 /, 'MDTM with a time sets it');
like(ftp_cmd($s, 'MDTM f.txt'), qr/^213 20210102030405\r/, 'MDTM reads it back');
like(ftp_cmd($s, 'SITE CHMOD 640 f.txt'), qr/^200 /, 'SITE CHMOD');
like(ftp_cmd($s, 'SITE HELP'), qr/^214-.*CHMOD/s, 'SITE HELP');
like(ftp_cmd($s, 'HELP SITE'), qr/^214-The following SITE commands/, 'HELP SITE');
like(ftp_cmd($s, 'SITE UMASK 022'), qr/^500 /, 'SITE UMASK: 500');
like(ftp_cmd($s, 'REIN'), qr/^220 /, 'REIN');
ftp_cmd($s, 'USER alice');
ftp_cmd($s, 'PASS pw-a');
like(ftp_cmd($s, 'FEAT'), qr/^ MLST type\*;size\*;modify\*;perm\*;unix.mode\*;\r$/m,
    'REIN: all facts again');
like(ftp_cmd($s, 'QUIT'), qr/^221 /, 'QUIT');
close $s;

# WinSCP: its start and an upload with times and mode

$s = login('alice', 'pw-a');
like(ftp_cmd($s, 'FEAT'), qr/^211 /m, 'FEAT');
like(ftp_cmd($s, 'CLNT WinSCP-6.3'), qr/^200 /, 'CLNT');
like(ftp_cmd($s, 'OPTS UTF8 ON'), qr/^200 /, 'OPTS UTF8 ON');
like(ftp_cmd($s, 'PWD'), qr/^257 /, 'PWD');
like(ftp_cmd($s, 'CWD /'), qr/^250 /, 'CWD /');
like(ftp_cmd($s, 'TYPE A'), qr/^200 /, 'TYPE A');
like(ftp_passive($s, 'LIST -a'), qr/ f.txt\r$/m, 'LIST -a');
like(ftp_cmd($s, 'TYPE I'), qr/^200 /, 'TYPE I');
like(ftp_cmd($s, 'SIZE f.txt'), qr/^213 5\r/, 'SIZE');
like(ftp_cmd($s, 'REST 0'), qr/^350 /, 'REST 0');
is(ftp_passive($s, 'STOR w.txt', "winscp\n"), '', 'STOR after REST 0');
is($t->read_file('data/alice/w.txt'), "winscp\n", 'the bytes');
like(ftp_cmd($s, 'MFMT 20190101000000 w.txt'), qr/^213 /, 'MFMT');
like(ftp_cmd($s, 'SITE CHMOD 600 w.txt'), qr/^200 /, 'SITE CHMOD');
is((stat "$d/data/alice/w.txt")[9], 1546300800, 'time set');
like(ftp_cmd($s, 'MLST w.txt'), qr/unix.mode=0600;/, 'MLST shows the mode');
like(ftp_cmd($s, 'QUIT'), qr/^221 /, 'QUIT');
close $s;

# control bytes inside an argument

$s = login('alice', 'pw-a');
like(ftp_cmd($s, "CWD a\rb"), qr/^500 /, 'CR inside an argument: 500');
like(ftp_cmd($s, "MKD a\tb"), qr/^500 /, 'TAB inside an argument: 500');
like(ftp_cmd($s, "MKD a\x01b"), qr/^500 /, 'other control byte: 500');
like(ftp_cmd($s, 'NOOP'), qr/^200 /, 'the session goes on');
ok(!grep({ /a.b/ } glob("$d/data/alice/*")), 'nothing made');
print $s "MKD lf\nmade\r\n";
like(scalar <$s>, qr/^257 /, 'a LF inside ends the line: MKD lf');
like(scalar <$s>, qr/^500 /, '... and "made" is an unknown command');

# too many invalid commands (max_errors 5): 421 and closed

$s = login('alice', 'pw-a');
my $r = '';
for (1 .. 5) {
    $r .= ftp_cmd($s, 'XYZZY');
}
is(() = $r =~ /^500 /mg, 5, 'five invalid lines: five 500s');
like(scalar <$s>, qr/^421 Too many invalid commands/, 'max_errors: then 421');
is(scalar <$s>, undef, '... and closed');

# each permission refused for a list,download user

$s = login('ro', 'pw-r');
like(ftp_cmd($s, 'MKD x'), qr/^550 /, 'no mkdir: MKD 550');
like(ftp_cmd($s, 'RMD sub'), qr/^550 /, 'no rmdir: RMD 550');
like(ftp_cmd($s, 'DELE r.txt'), qr/^550 /, 'no delete: DELE 550');
ftp_cmd($s, 'RNFR r.txt');
like(ftp_cmd($s, 'RNTO r2.txt'), qr/^550 /, 'no rename: RNTO 550');
like(ftp_cmd($s, 'SITE CHMOD 600 r.txt'), qr/^550 /, 'no chmod: SITE CHMOD 550');
like(ftp_cmd($s, 'MFMT 20200101000000 r.txt'), qr/^550 /, 'MFMT 550');
for my $c ('STOR r.txt', 'STOR new.txt', 'APPE r.txt', 'STOU') {
    ftp_cmd($s, 'EPSV');
    like(ftp_cmd($s, $c), qr/^550 /, "no upload: $c 550");
}
ok(-e "$d/data/ro/r.txt" && -d "$d/data/ro/sub"
    && !-e "$d/data/ro/new.txt" && !-e "$d/data/ro/r2.txt",
    'nothing changed');
is($t->read_file('data/ro/r.txt'), "read only\n", 'r.txt as it was');
ftp_cmd($s, 'QUIT');

# the ban: 3 failed logins from 127.0.0.2, then it is refused at once;
# 127.0.0.1 is not

for (1 .. 3) {
    $s = ctl('127.0.0.2');
    ftp_cmd($s, 'USER alice');
    like(ftp_cmd($s, 'PASS wrong'), qr/^530 Login incorrect/,
        "failed login $_ from 127.0.0.2");
    close $s;
}

($s, $g) = ctl('127.0.0.2');
like($g, qr/^421 /, 'then 127.0.0.2 is banned: 421 at the greeting');
is(scalar <$s>, undef, '... and closed');

$s = login('alice', 'pw-a');
like(ftp_cmd($s, 'NOOP'), qr/^200 /, '127.0.0.1 still logs in');
ftp_cmd($s, 'QUIT');

like($t->read_file('error.log'), qr/address is banned/, 'the ban is logged');

$t->done();
