"""Stanford CoreNLP 3.7.0's PTBTokenizer (default options), in TensorFlow string ops.

This is the tokenisation the original CNN/DailyMail data was made with, so that raw English text
reaches a model trained on that data (or its vocab) as the same tokens. CoreNLP's tokenizer is a
longest-match lexer with a little trailing context; here it is stages of RE2 passes
(`tf.strings.regex_replace`, a core op every TensorFlow runtime and TF Serving has):

0. Markup (SGML/XML tags, e-mail addresses in angle brackets), which CoreNLP keeps whole with
   whatever quotes, entities and words it holds, is taken out first and a mark left in its
   place: one token, put back at the end, and context for the rules around it.
1. `_PRE`: rewrites that need context. RE2 has no look-ahead, so a rule that depends on what
   follows (an abbreviation's period before a capital, a quote's direction, `'s` before a
   non-letter) captures that context and writes it back, and either inserts a space (a split),
   wraps a finished token in `_DELIM`, or replaces a character with a private-use marker that
   the lexer keeps inside the token:
     _KEPT_DOT     a period that belongs to the word before it (`Mr.`, `U.S.`, `Inc.`);
     _LEFT_APOS    a straight `'` that opens a quotation (becomes a backtick);
     _CLITIC_APOS  the apostrophe that starts a clitic (`'s`, `'ll`, `n't`);
     _WORD_APOS    an apostrophe inside a word (`O'Neill`, `'T is`, `Y' all`);
     _WORD_BACKTICK a backtick or left quote inside a word (`Mu`ammar`).
2. The lexer: `_SPECIAL` then `_TOKEN`, alternations that match a whole token at each position,
   leftmost-first, with alternatives ordered so that the first one to match is the one
   CoreNLP's longest match picks. Every token is wrapped in `_DELIM` (never in text), and the
   text is split on it.
3. `_POST`: per-token rewrites: PTB escapes of brackets, quotes, dashes, ellipses, currency and
   the markers back to their characters; then the markup back in place of its marks.

Text is processed a line at a time: a line ends as CoreNLP with -preserveLines sees the end of
its input. (Inside a story file a few rules also look across a line break: an acronym or `m.`
before a paragraph that starts with `The`, a smiley at a paragraph's end.)
"""

import tensorflow as tf

# Never in text: the control character SOH separates tokens; private-use characters mark
# punctuation that stays inside a token.
_DELIM = "\x01"
_KEPT_DOT = "\ue000"
_LEFT_APOS = "\ue001"
_CLITIC_APOS = "\ue002"
_WORD_APOS = "\ue003"
_WORD_BACKTICK = "\ue004"
# Brackets the name of an accented letter written as an entity (`&eacute;`): a letter inside
# a word.
_ENTITY_LETTER = "\ue005"
# Stand in the text for markup taken out before the rewrites (see _take_out_markup).
_TAG_MARK = "\ue010"
_EMAIL_MARK = "\ue011"
_M = _TAG_MARK + _EMAIL_MARK
_MARKS = "[" + _M + "]"
# Never inside a special token: the delimiter of a token already made, a mark of markup.
_APART = _DELIM + _M


def _email(excluded):
  """An e-mail address whose parts hold no space, `"<>|(){}` nor any of `excluded`."""
  part = "[^ \"<>|(){}" + excluded
  return "[a-zA-Z0-9]" + part + "]*@(?:" + part + ".]+\\.)*" + part + ".]+"


# Markup, one token each, taken out of the text before any rewrite because it may hold quotes,
# entities and words that are left as they are: SGML/XML tags (spaces inside become no-break
# spaces), comments, processing instructions, and e-mail addresses in angle brackets.
_NAME = r"[A-Za-z][A-Za-z0-9_:.-]*"
_TAG = ("<(?:[!?][A-Za-z-][^>" + _APART + "]*|/" + _NAME + "|" + _NAME + "(?: +" + _NAME +
        "(?: *= *(?:'[^'" + _APART + "]*'|\"[^\"" + _APART + "]*\"|" + _NAME + "))?)* */?) *>")
_BRACKETED_EMAIL = "(?:<|(?i:&lt;))" + _email("&" + _APART) + "(?:>|(?i:&gt;))?"

_ALNUM = r"[\pL\pM\p{Nd}]"  # letters (with combining marks) and decimal digits
# Apostrophes (ASCII and U+2019, to which CP1252's is mapped first) and the opening-quote
# marker.
_APOS = r"['\x{2019}" + _LEFT_APOS + "]"
# Also accepted inside a word: backtick, the left single quotes, the inner-apostrophe marker.
_APOSX = r"['\x{2019}`\x{2018}\x{201B}" + _LEFT_APOS + _WORD_APOS + _WORD_BACKTICK + "]"
_START = r"(^|[^\pL\pM\p{Nd}])"  # what may precede a token that starts with a letter

# Abbreviations. CoreNLP's lexer is case-insensitive for literal text, but a few state names
# must start with a capital (`ill.` and `mass.` are ordinary words).
# Keep their period; a sentence ends after them before a capital, a blank or the end of text.
_ABBREV1 = ("(?i:jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec|mon|tue|tues|wed|thu|thurs|fri"
            "|ala|ariz|calif|colo|conn|ct|dak|fla|ga|ind|kans?|ky|md|mich|minn|mo|mont|neb|nev"
            "|okla|penn|tenn|va|vt|wyo|wisc?"
            "|inc|cos?|corp|pp?t[ye]s?|ltd|plc|rt|bancorp|bhd|assn|univ|intl|sys"
            "|tel|est|ext|sq|jr|sr|bros|ed\\.d|ph\\.d|blvd|rd|esq|etc|al|seq|bldg)"
            "|A(?i:z|rk)|D(?i:el)|I(?i:ll)|L(?i:a)|M(?i:ass|iss)|O(?i:re)|P(?i:a)|T(?i:ex)"
            "|W(?i:ash)")
# Keep their period wherever they are: titles and a few others.
_ABBREV2 = ("(?i:mr|mrs|ms|drs?|profs?|sens?|reps?|attys?|lt|col|gen|messrs|govs?|adm|rev|maj"
            "|sgt|cpl|pvt|capt|ste?|ave|pres|lieut|hon|brig|co?mdr|pfc|spc|supts?|det|mt|ft"
            "|adj|adv|asst|assoc|ens|insp|mlle|mme|msgr|sfc|invt|elec|natl|m[ft]g|dept"
            "|vs|v|alex|wm|jos|cie|a\\.k\\.a|cf|treas|ph)")
# Keep their period only before a number (`No. 10`, but `the answer was no.`).
_ABBREV3 = "(?i:ca|figs?|prop|nos?|sect?s?|arts?|bldg|pp|op)"
# After an acronym, these words start a new sentence (the acronym also gets a `.` token). The
# first letter must be a capital; the rest is case-insensitive.
_SENTENCE_STARTS = (
    "A(?i:bout|ccording|dditionally|fter|n|s|t)?|B(?i:ut)|D(?i:id|uring)|E(?i:arlier)"
    "|H(?i:e|er|ere|ow|owever)|I(?i:f|n|t)|L(?i:ast)|M(?i:any|ore|r\\.|s\\.)|N(?i:ow)"
    "|O(?i:nce|ne|ther|ur)|S(?i:he|ince|o|ome|uch)"
    "|T(?i:hat|he|heir|hen|here|hese|hey|his)|W(?i:e|hen|hile|hat|ho|hy)|Y(?i:et|ou)")

# A sentence-starting word or a tag, and then a space, `?` or `!`.
_STARTS_SENTENCE = "(?:" + _SENTENCE_STARTS + "|" + _TAG_MARK + ")(?: |[?!])"

_NOT_WORDCHAR = r"([^\pL\pM\p{Nd}]|$)"  # what may follow a token that ends in a letter or digit

# An apostrophe inside a word is one of two kinds, and keeps its kind: straight (also U+2019)
# or backtick (also U+2018). Each with the mark that keeps it inside the word.
_APOSTROPHE_KINDS = ((r"['\x{2019}]", _WORD_APOS), (r"[`\x{2018}]", _WORD_BACKTICK))

# File names: letters and digits joined by - ~ . ! _ / #, then a known extension. With a
# one-letter extension the name must not be an acronym (`3.x` and `stdio.h` are files, the
# `D.C` of `D.C.` is not).
_FILE_PART = "(?:[-~.!_/#]" + _ALNUM + "+)*"
_FILENAME = (
    "(?:" + _ALNUM + "+" + _FILE_PART + r"\.(?i:3gp|avi|bat|bmp|bz2|class|cgi|cpp|dll|docx?|exe"
    "|flv|gif|gz|html?|jar|java|jpe?g|mov|mp[34g]|mpeg|pdf|php|pl|png|ppt|ps|py|sql|tar|txt|wav"
    r"|xml|zip)|(?:[A-Za-z]\.)*(?:" + _ALNUM + "{2,}|[^A-Za-z\\PL]" + _ALNUM + r"*|[\p{Nd}\pM]"
    + _ALNUM + "*|[A-Za-z][-~!_/#]" + _ALNUM + "+)" + _FILE_PART + r"\.(?i:[chox]))")

_PRE = (
    # HTML entities CoreNLP decodes (the dashes become the PTB dash below).
    (r"(?i:&amp;)", "&"),
    (r"(?i:&apos;)", "'"),
    (r"(?i:&quot;)", '"'),
    (r"(?i:&lt;)", "<"),
    (r"(?i:&gt;)", ">"),
    (r"(?i:&(?:md|mdash|ndash);)", " -- "),
    # CP1252 punctuation read as Latin-1 code points: quotes, dashes, ellipsis, euro, bullet, TM.
    (r"\x{91}", "\u2018"), (r"\x{92}", "\u2019"), (r"\x{93}", "\u201c"), (r"\x{94}", "\u201d"),
    (r"[\x{96}\x{97}]", "\u2013"), (r"\x{85}", "\u2026"), (r"\x{80}", "\u20ac"),
    (r"\x{95}", "\u2022"), (r"\x{99}", "\u2122"),
    # Characters CoreNLP skips: NUL, DEL, zero-width and bidi marks, BOM, U+FFFD, `&nbsp;`, and
    # everything beyond the BMP (3.7.0's lexer cannot read it and deletes it).
    (r"[\x00\x7f\x{200b}\x{200e}\x{200f}\x{feff}\x{fffd}\x{10000}-\x{10ffff}]|(?i:&nbsp;)", ""),
    # A soft hyphen beside a letter or digit belongs to that word or number and disappears
    # (`co\xadoperate`, `D-\xadIll.`, `\xad2` -> `2`); alone it is a hyphen.
    (r"(" + _ALNUM + r")\x{ad}+|\x{ad}+(" + _ALNUM + ")", r"\1\2"),
    (r"\x{ad}", "-"),
    # A U+2010 hyphen counts only inside a word; alone it is deleted.
    (r"(" + _ALNUM + r")[\x{2010}\x{2011}](" + _ALNUM + ")", r"\1-\2"),
    (r"[\x{2010}\x{2011}]", ""),
    # Whitespace (no-break space included: tokens that keep a space get U+00A0 back at the end).
    (r"[\t\x{a0}\x{2000}-\x{200a}\x{3000}\x{2028}\x{2029}\x0b\x0c\r\n]", " "),
    # Other control, format and private-use characters are untokenisable: deleted (all but the
    # marks that stand for markup taken out).
    (r"[\p{Cc}\p{Cf}\x{e000}-\x{e00f}\x{e012}-\x{f8ff}]", ""),
    # An accented vowel written as an entity is a letter inside its word (`Elys&eacute;`).
    (r"&([aeiouAEIOU](?i:acute|grave|uml));", _ENTITY_LETTER + r"\1" + _ENTITY_LETTER),
    # Character entities that CoreNLP keeps as one token.
    (r"(&(?i:ht|tl|ur|lr|qc|ql|qr|odq|cdq|#[0-9]+);)", _DELIM + r"\1" + _DELIM),
    # Dashes and ellipsis characters are tokens of their own.
    (r"[\x{2013}\x{2014}\x{2015}]", " -- "),
    (r"\x{2026}", " ... "),
    # Four or more dots, spaced or not, before a word: the last is a sentence's period.
    (r"(\.\.\.+|\.(?: \.){2,})( ?\. +\pL)", r"\1 \2"),
    # A word or a hyphenated word keeps its period before , ; or : (`Ore.,`, `D-Ill.,`; first: a
    # smiley would take the `:`).
    (_START + "(" + _ALNUM + r"[\pL\pM\p{Nd}.,]*(?:[-_]" + _ALNUM + r"+)+\.)([,;:])",
     r"\1" + _DELIM + r"\2" + _DELIM + r"\3"),
    (_START + r"(\pL" + _ALNUM + r"*(?:[.!?]\pL" + _ALNUM + r"*)*)\.([,;:])",
     r"\1\2" + _KEPT_DOT + r"\3"),
    # Smileys before a non-word character are tokens (their brackets escaped later).
    (r"([<>]?[:;=][-o*']?[()DPdpO\\{@|\[\]])([^\pL\p{Nd}])", _DELIM + r"\1" + _DELIM + r"\2"),
    # A number with a decimal part ends before letters (`4.2bn` -> `4.2 bn`, `4:45pm`), while
    # an integer keeps them (`100m`, `5pm`), and so does a hyphenated word (`1.2bn-worth`).
    (r"(\p{Nd}[.,:]\p{Nd}+)(\pL" + _ALNUM + r"*)([^-\pL\pM\p{Nd}]|$)", r"\1 \2\3"),
    # Double quotes: curly and guillemets have a fixed direction; `''` always closes; a straight
    # one opens before a letter, digit or `$` and closes otherwise.
    (r"[\x{201c}\x{ab}]", "``"),
    (r"[\x{201d}\x{bb}]|['`\x{2018}\x{2019}]'", _DELIM + "''" + _DELIM),
    (r"\"([\pL\p{Nd}$])", r"``\1"),
    (r"\"", _DELIM + "''" + _DELIM),
    # Assimilations are split: can not, gon na, got ta, wan na, lem me, gim me, du n no, 't is.
    (r"\b((?i:can))((?i:not))\b", r"\1 \2"),
    (r"\b((?i:gon|wan))((?i:na))\b", r"\1 \2"),
    (r"\b((?i:got))((?i:ta))\b", r"\1 \2"),
    (r"\b((?i:lem|gim))((?i:me))\b", r"\1 \2"),
    (r"\b((?i:du))((?i:n))((?i:no))\b", r"\1 \2 \3"),
    (_START + r"['\x{2019}]((?i:t))((?i:was|is))\b", r"\1" + _WORD_APOS + r"\2 \3"),
    # Words with an apostrophe in the middle that CoreNLP lists.
    (r"\b((?i:cont'd\.|(?:cont'd|nor'easter|c'mon|e'er|s'mores|ev'ry|li'l|nat'l|cap'n|c'est)\b))",
     _DELIM + r"\1" + _DELIM),
    # 'n' is a word (rock'n'roll too).
    (r"['\x{2019}]([nN])['\x{2019}]", _DELIM + _WORD_APOS + r"\1" + _WORD_APOS + _DELIM),
    # Apostrophes that belong to a word or start a clitic are marked before the quote rule
    # below looks at the rest. n't splits off the word before it (`do n't`, `ca n't`).
    (r"(\pL)((?i:n))['\x{2019}]((?i:t))([^\pL]|$)", r"\1 \2" + _CLITIC_APOS + r"\3\4"),
    (r"(\pL)((?i:n)[`\x{2018}\x{201b}](?i:t))([^\pL]|$)", r"\1 \2\3"),
    # 's 'm 'd 're 've 'll before a non-letter are tokens; twice, for `we'd've`.
    (r"['\x{2019}]((?i:s|m|d|re|ve|ll))([^\pL]|$)", _CLITIC_APOS + r"\1\2"),
    (r"['\x{2019}]((?i:s|m|d|re|ve|ll))([^\pL]|$)", _CLITIC_APOS + r"\1\2"),
    # `y'` before a lower-case letter is a word (`Y' all`); so is '99 before a space.
    (r"\b([yY])['\x{2019}]([a-z])", r"\1" + _WORD_APOS + r" \2"),
    (_START + r"['\x{2019}](\p{Nd}\p{Nd} )", r"\1" + _WORD_APOS + r"\2"),
    # Inside a word: O'Neill, d'Arcy, l'Oreal at its start; Shi'ite between lower-case vowels.
    # A backtick or left quote there stays one (`Mu`ammar`, `Mu\u2018ammar` -> `Mu`ammar`).
    *((_START + r"([dDoOlL])" + apostrophe + "(" + _ALNUM + ")", r"\1\2" + mark + r"\3")
      for apostrophe, mark in _APOSTROPHE_KINDS),
    *((_START + r"([A-HJ-XZn])" + apostrophe + r"(\pL\pL)", r"\1\2" + mark + r"\3")
      for apostrophe, mark in _APOSTROPHE_KINDS),
    *((r"([aeiouy])" + apostrophe + "([aeiou])", r"\1" + mark + r"\2")
      for apostrophe, mark in _APOSTROPHE_KINDS),
    # Any other straight single quote before a letter and then a non-space opens a quotation.
    (r"'(\pL[^ ])", _LEFT_APOS + r"\1"),
    # File names are tokens (before acronyms take a period: `D.C.` is no file, `3.x.` is one).
    (r"(^|[^\pL\pM\p{Nd}_~.!/#:@&$\\-])(" + _FILENAME + r")\b", r"\1" + _DELIM + r"\2" + _DELIM),
    # `OK!` before "Magazine" keeps its `!`.
    (_START + r"((?i:ok)!)( (?i:magazine))", r"\1" + _DELIM + r"\2" + _DELIM + r"\3"),
    # An acronym before a sentence-starting word ends the sentence: it keeps its period and a
    # `.` token follows; a single letter (`I.`, the `m.` of `1.2m.`) loses its period to it.
    (r"\b([A-Za-z](?:\.[A-Za-z])+)\.( +" + _STARTS_SENTENCE + ")", r"\1" + _KEPT_DOT + r" .\2"),
    (r"\b([A-Za-z])\.( +" + _STARTS_SENTENCE + ")", r"\1 .\2"),
    # Abbreviations keep their period unless a letter or digit follows it (Mr.Benn and
    # amazon.co.uk are one word). `Co.` and `Pty.` before Ltd/Limited do not end a sentence.
    (r"\b((?i:pt[ey]|co))\.( (?i:ltd|lim))", r"\1" + _KEPT_DOT + r"\2"),
    # ABBREV1 before a space and a capital or a tag, two spaces, or the end of the line: also a
    # `.`.
    (r"\b(" + _ABBREV1 + r")\.( [ \p{Lu}" + _TAG_MARK + r"]|[^\pL\pM\p{Nd}]?$)",
     r"\1" + _KEPT_DOT + r" .\2"),
    (r"\b(" + _ABBREV1 + r")\." + _NOT_WORDCHAR, r"\1" + _KEPT_DOT + r"\2"),
    (r"\b(" + _ABBREV3 + r")\.( ?\p{Nd})", r"\1" + _KEPT_DOT + r"\2"),
    (r"\b((?i:so|no))\.( +(?i:africa|korea|cal))", r"\1" + _KEPT_DOT + r"\2"),
    # Titles and acronyms, single letters included (`J. Smith`, `1.2 m.`, `U.S.`).
    (r"\b(" + _ABBREV2 + r"|[A-Za-z](?:\.[A-Za-z])*)\." + _NOT_WORDCHAR,
     r"\1" + _KEPT_DOT + r"\2"),
)

# The lexer's character classes. Unicode's letter class is hundreds of ranges, and with one
# copy per rule the alternation overflows RE2's DFA memory (RE2 then falls back to a slow
# matcher and logs every call). So in the lexer a letter is an ASCII letter or any non-ASCII
# character outside the Latin-1 punctuation, general punctuation, symbol, CJK punctuation,
# private-use and special blocks (punctuation of other scripts counts as a letter), and a digit
# is ASCII.
_L = (r"A-Za-z\x{c0}-\x{d6}\x{d8}-\x{f6}\x{f8}-\x{1fff}\x{2c00}-\x{2dff}\x{2e80}-\x{2fff}"
      r"\x{3040}-\x{d7ff}\x{f900}-\x{fdff}\x{fe70}-\x{fefe}\x{ff21}-\x{ff3a}\x{ff41}-\x{ff5a}"
      r"\x{ff66}-\x{ffdc}" + _ENTITY_LETTER)
_LETTER = "[" + _L + "]"
_WORDCHAR = "[0-9" + _L + "]"
_NUMBER = r"[-+]?(?:[0-9]+(?:[.:,][0-9]+)+|[0-9]*(?:[.,][0-9]+)+)"  # with separators
_APO_PREFIX = r"(?:[dDoOlL]" + _APOSX + r")"  # d'Avignon, O'Neill, l'Oreal
# What may follow a hyphen inside a word: letters and digits, or an acronym (anti-U.S.);
# not the rest of a number (`6-6.5` is `6-6 .5`).
_PART = (r"(?:" + _APO_PREFIX + "?" + _WORDCHAR + r"+|[A-Za-z](?:\.[A-Za-z])+" + _KEPT_DOT +
         ")")

_EMAIL = _email(_APART)
# CoreNLP's list of swear words with letters starred or dashed out (`f**k`, `sh*tty`); its
# letters match either case, its character classes as written.
_SWEARING = ("(?i:f(?-i:[-*][-c*])k(?:in[g']?|e[dr])?|f[-*](?:in[g']?|e[dr])"
             "|(?:bull|dip)?s(?-i:[h@])[-*#]t(?:ty|e|box|s)?|c[-*]nts?|p[-*]ss(?:e[sd]|ing)?"
             "|c[-*]ck|b[-*]tch|t[-*]ts|tw[-*]ts?|cr[-*]p|d[-*]cks?|b[-*](?-i:[-*s])t[-*]rds?"
             "|pr[-*]ck|d[-*]mn|bl[-*]{2}dy)")

# Tokens that may contain characters which elsewhere separate tokens (URLs, e-mail, phone
# numbers and fractions with a space); matched first, and only where a token starts.
_SPECIAL = "|".join((
    # Programming languages: C++, C#, F#.
    r"(?i:c\+\+|[cf]#)",
    # URLs, e-mail addresses, @names and #hashtags. A likely URL's host parts exclude `,` to
    # `_` (a character range in CoreNLP's pattern), i.e. capitals and digits.
    # A URL does not end in punctuation (nor in a period marked as an abbreviation's).
    r"(?i:ftp|svn|svn\+ssh|https?|mailto)://[^ \"<>|(){}\[\]" + _APART + r"]*[^ \"'<>|.!?(){},;:&"
    r"\[\]" + _KEPT_DOT + _APART + "-]",
    r"(?:www\.(?:[^ \"<>|.!?(){}," + _APART + r"]+\.)+[a-zA-Z]{2,4}|(?:[^ \"`'<>|.!?(){},-_$" +
    _APART + r"]+\.)+(?i:com|net|org|edu)(?:\.[A-Za-z]+)*)(?:/[^ \"<>|()" + _APART +
    r"]*[^ \"<>|.!?(){}," + _KEPT_DOT + _APART + "-])?",
    _EMAIL,
    r"@[a-zA-Z_][a-zA-Z_0-9]*",
    "#" + _LETTER + _WORDCHAR + "*",
    # Currency signs: US$, C$, $, and ## runs before the single #.
    r"[A-Z]*\$",
    r"##+",
    # ISO 8601 date and time; dates, phone numbers and fractions (the latter two may hold a
    # space).
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}(?i:t)[0-9]{2}:[0-9]{2}:[0-9]{2}",
    r"[0-9]{1,2}[-/][0-9]{1,2}[-/][0-9]{2,4}",
    r"(?:\([0-9]{2,3}\) ?|(?:[0-9]{2,4}[- ])?[0-9]{2,4}[- ])[0-9]{3,4}[- ]?[0-9]{3,5}",
    # Words joined by slashes (HIV/AIDS, km/h, 2/3rds).
    _WORDCHAR + "+(?:-" + _LETTER + "+){0,2}(?:\\\\?/" + _WORDCHAR + "+(?:-" + _LETTER +
    "+){0,2}){1,2}",
    r"(?:[0-9]{1,4}[- ])?[0-9]{1,4}\\?[/\x{2044}][0-9]{1,4}",
    # Company names with & or + (AT&T, S&P), and two of the Treebank's: S&Ls, S&P-500.
    r"(?i:s&ls|s&p-500)",
    r"[A-Z]+(?:[+&][A-Z]+)+",
))

# Every other token. Tokens already delimited (by _SPECIAL) are matched whole first.
_TOKEN = "|".join((
    _DELIM + "[^" + _DELIM + "]*" + _DELIM,
    # Already decided: PTB double quotes, words with a marked apostrophe.
    r"``|''",
    "[" + _CLITIC_APOS + _WORD_APOS + "]" + _WORDCHAR + "+",
    _WORDCHAR + "+(?:[" + _WORD_APOS + _WORD_BACKTICK + "]" + _WORDCHAR + "+)+",
    # Hyphenated words and numbers stay whole (3-year-old, 2014-15, U.S.-led, 1,000-strong).
    _APO_PREFIX + "?" + _WORDCHAR + "[0-9" + _L + ".," + _KEPT_DOT + "]*(?:[-_]" +
    _PART + ")+",
    # Swear words with letters starred out (f**k, sh*t), as CoreNLP lists them.
    _SWEARING,
    # Asian smileys: ^_^, (x.x), (^-^); and degrees: °C, °F.
    r"[-^x=~<>']_[-^x=~<>']|\([-^x=~<>'][_.]?[-^x=~<>']\)|\([\^x=~<>']-[\^x=~<>'`]\)",
    r"\x{b0}[CcFf]",
    # Numbers with separators (3.14, 1,000, 4:45, .5, -5).
    _NUMBER,
    r"[-+][0-9]+",
    # Words whose period was kept.
    _WORDCHAR + "[0-9" + _L + ".]*[" + _KEPT_DOT + _WORD_APOS + "]",
    # Words with an apostrophe CoreNLP keeps: n't, 'n', 'em, '90s, 'til, O'Neill, ...
    r"(?i:n)[`\x{2018}\x{201B}" + _CLITIC_APOS + "](?i:t)",
    # 'n' ('n alone: a quote before `New` is an opening quote).
    _APOS + r"(?i:n)" + _APOS + r"|['\x{2019}](?i:n)",
    _APOS + r"(?i:em|till?|cause)",
    _APOS + r"[2-9]0(?i:s)",
    _APO_PREFIX + _WORDCHAR + "+",
    r"[A-HJ-XZn]" + _APOSX + _LETTER + _LETTER + "+",
    r"(?i:dunkin|somethin|ol)" + _APOS,
    # Bang words.
    r"(?i:e|yahoo|jeopardy)!",
    # Words (a `.`, `!` or `?` between letters stays inside: word.Another), plain words.
    _LETTER + _WORDCHAR + "*(?:[.!?]" + _LETTER + _WORDCHAR + "*)+",
    _WORDCHAR + "+",
    # Punctuation runs.
    r"\.\.\.+|\.(?: \.){2,}|[?!]+|-+|@+|_+|\*+|=+|<<|>>",
    # Anything else (only printable characters are left) is a token of one character.
    "[^ ]",
))

_POST = (
    # Brackets, also inside phone numbers: -LRB- etc.
    (r"\(", "-LRB-"), (r"\)", "-RRB-"), (r"\[", "-LSB-"), (r"\]", "-RSB-"),
    (r"\{", "-LCB-"), (r"\}", "-RCB-"),
    # Three or four hyphens are a dash; any run of dots (or spaced dots) an ellipsis.
    (r"^-{3,4}$", "--"),
    (r"^(?:\.\.\.+|\.(?: \.)+)$", "..."),
    # Currency: pound -> #, euro and the generic sign -> $, cent sign -> cents.
    (r"^\x{a3}$", "#"), (r"^[\x{20ac}\x{a4}\x{20a0}]$", "$"), (r"^\x{a2}$", "cents"),
    # Vulgar fractions are written out.
    (r"^\x{bc}$", "1/4"), (r"^\x{bd}$", "1/2"), (r"^\x{be}$", "3/4"),
    (r"^\x{2153}$", "1/3"), (r"^\x{2154}$", "2/3"),
    # Quotes: an opening straight quote is a backtick, every other apostrophe is ASCII.
    ("^" + _LEFT_APOS + "$", "`"),
    (r"[\x{2019}\x{203a}" + _LEFT_APOS + _CLITIC_APOS + _WORD_APOS + "]", "'"),
    (r"[\x{2018}\x{201b}\x{2039}" + _WORD_BACKTICK + "]", "`"),
    # An accented vowel written as an entity gets its `&` and `;` back.
    (_ENTITY_LETTER + "([^" + _ENTITY_LETTER + "]*)" + _ENTITY_LETTER, r"&\1;"),
    (_KEPT_DOT, "."),
    # A space kept inside a token (fractions, phone numbers) is a no-break space.
    (" ", "\u00a0"),
)


def tokenize_lines(lines):
  """PTB tokens of each line: a [M] string tensor -> a ragged [M, (T)] one."""
  text, markup = _take_out_markup(lines)  # [M], [K]
  for pattern, rewrite in _PRE:
    text = tf.strings.regex_replace(text, pattern, rewrite)  # [M]
  # Two passes because RE2 runs out of DFA memory on one alternation of all rules. The first
  # passes over tokens already delimited (a file name holds what looks like a date or words
  # joined by a slash) and delimits special tokens (and an empty one after each passed over).
  text = tf.strings.regex_replace(
      text, "(" + _DELIM + "[^" + _DELIM + "]*" + _DELIM + r")|(^|[^\pL\pM\p{Nd}-])(" + _SPECIAL +
      ")", r"\1\2" + _DELIM + r"\3" + _DELIM)  # [M]
  text = tf.strings.regex_replace(text, _TOKEN, _DELIM + r"\0" + _DELIM)  # [M]
  pieces = tf.strings.split(text, _DELIM)  # [M, (P)]
  # Between two tokens there is only whitespace, which strips to nothing.
  pieces = tf.ragged.map_flat_values(tf.strings.strip, pieces)  # [M, (P)]
  tokens = tf.ragged.boolean_mask(pieces, tf.not_equal(pieces, ""))  # [M, (T)]
  flat = tokens.flat_values  # [sum of T]
  for pattern, rewrite in _POST:
    flat = tf.strings.regex_replace(flat, pattern, rewrite)
  return tokens.with_flat_values(_put_back_markup(flat, markup))


def open_markup(lines):
  """[M] lines -> [M] bool: whether a line holds a `<` that may open markup it does not close,
  i.e. that markup could end beyond the line's end, were it cut there (then what follows the `<`
  may tokenise differently). A tag that the line closes is the tag the longer line has: the
  tag pattern matches at most one way from a `<` (its parts are told apart by their first
  character; a `>` ends it only outside quotes, and a `<!`/`<?` at its first `>`)."""
  text, _ = _take_out_markup(lines)  # [M]
  return tf.not_equal(tf.strings.regex_replace(text, "<[!?/A-Za-z]", ""), text)  # [M]


def _take_out_markup(lines):
  """[M] lines -> the lines with a mark in place of each piece of markup, and the markup [K]
  (in order, as tokens), so that no rewrite touches what is inside it. Before a tag a mark is
  context, as the tag is for CoreNLP (it ends a sentence after an abbreviation)."""
  text = tf.strings.regex_replace(lines, _MARKS + "|" + _DELIM, "")  # [M]
  # `<<` is a token: it does not start a tag (`<<Name Inc>>`).
  text = tf.strings.regex_replace(text, "<<", _DELIM + "<<" + _DELIM)  # [M]
  text = tf.strings.regex_replace(text, _TAG, _DELIM + _TAG_MARK + r"\0" + _DELIM)  # [M]
  text = tf.strings.regex_replace(text, _BRACKETED_EMAIL,
                                  _DELIM + _EMAIL_MARK + r"\0" + _DELIM)  # [M]
  pieces = tf.strings.split(text, _DELIM).flat_values  # [P]
  markup = tf.boolean_mask(pieces, tf.strings.regex_full_match(pieces, _MARKS + ".*"))  # [K]
  markup = tf.strings.regex_replace(markup, "^" + _MARKS, "")  # [K]
  markup = tf.strings.regex_replace(markup, " ", "\u00a0")  # [K]
  text = tf.strings.regex_replace(text, _DELIM + "(" + _MARKS + ")[^" + _DELIM + "]*" + _DELIM,
                                  r"\1")  # [M]
  return text, markup


def _put_back_markup(flat, markup):
  """Each mark among the tokens [N] replaced by its markup, the k-th mark by markup[k]."""
  is_mark = tf.cast(tf.strings.regex_full_match(flat, _MARKS), tf.int32)  # [N]
  position = tf.range(tf.size(flat))  # [N]
  # A mark's index points past the N tokens, into the markup that follows them.
  index = position + is_mark * (tf.size(flat) + tf.cumsum(is_mark) - 1 - position)  # [N]
  return tf.gather(tf.concat([flat, markup], 0), index)  # [N]
