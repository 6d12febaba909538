/**
 * What a code block's language tag names, by GitHub Linguist's table of languages
 * (linguist-languages): a Markdown fence tagged `py`, `python3` or `Python` is Python, `sh`, `bash`
 * and `zsh` are Shell, `js` is JavaScript, as GitHub highlights them. Chunk metadata lists the
 * language's name, so one filter finds every spelling, and the tag as written beside it when it
 * differs, so a filter on the tag as written still finds it.
 *
 * Loaded at the first document with tagged code: importing the table's 833 modules takes about
 * 0.6 s, which a service that never sees code need not pay at start.
 */

/** The names a tag stands for, lower-cased: the language's name first, then the tag as written if other. */
export type CodeLanguageNames = (tag: string) => string[];

interface LinguistLanguage {
  name: string;
  aliases?: readonly string[];
  extensions?: readonly string[];
}

let loading: Promise<CodeLanguageNames> | undefined;

export function loadCodeLanguageNames(): Promise<CodeLanguageNames> {
  loading ??= import('linguist-languages').then((languages) => namesOf(Object.values(languages) as LinguistLanguage[]));
  return loading;
}

function namesOf(languages: readonly LinguistLanguage[]): CodeLanguageNames {
  const byTag = new Map<string, string>();
  // Names before aliases before extensions, so that no alias or extension takes a language's own name.
  for (const language of languages) byTag.set(language.name.toLowerCase(), language.name.toLowerCase());
  for (const language of languages) {
    for (const alias of language.aliases ?? []) if (!byTag.has(alias.toLowerCase())) byTag.set(alias.toLowerCase(), language.name.toLowerCase());
  }
  // A fence tagged with a file extension (`ps1`, `kt`) names the language when only one claims it.
  const claimants = new Map<string, Set<string>>();
  for (const language of languages) {
    for (const extension of language.extensions ?? []) {
      const tag = extension.replace(/^\./, '').toLowerCase();
      claimants.set(tag, (claimants.get(tag) ?? new Set()).add(language.name.toLowerCase()));
    }
  }
  for (const [tag, names] of claimants) if (names.size === 1 && !byTag.has(tag)) byTag.set(tag, [...names][0]!);
  return (tag) => {
    const written = tag.toLowerCase();
    const name = byTag.get(written);
    return name === undefined || name === written ? [written] : [name, written];
  };
}
