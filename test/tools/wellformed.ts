// A small well-formedness check for the generated pages: every tag is closed in order (HTML
// void elements excepted; inside <svg> only self-closing tags may stand alone), attribute
// values are quoted, and no raw '<' or bare '&' is left in text.

const VOID = new Set(["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"]);
const TAG = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[^\s=>/"']+(?:\s*=\s*(?:"[^"]*"|'[^']*'))?)*)\s*(\/?)>/g;

/** Problems found (empty when the page is well-formed). */
export function wellFormedProblems(html: string): string[] {
  const problems: string[] = [];
  // script/style bodies are not markup
  let src = html.replace(/<(script|style)>[\s\S]*?<\/\1>/g, (_m, t: string) => `<${t}></${t}>`);
  src = src.replace(/^<!DOCTYPE html>\s*/i, "").replace(/<!--[\s\S]*?-->/g, "");
  const stack: string[] = [];
  let last = 0;
  let m: RegExpExecArray | null;
  const text = (s: string, at: number) => {
    if (s.includes("<")) problems.push(`raw '<' in text near offset ${at}: ${JSON.stringify(s.slice(Math.max(0, s.indexOf("<") - 20), s.indexOf("<") + 40))}`);
    const amp = /&(?!(?:amp|lt|gt|quot|#39|#\d+|#x[0-9a-f]+|nbsp);)/i.exec(s);
    if (amp) problems.push(`bare '&' in text near offset ${at + amp.index}`);
  };
  TAG.lastIndex = 0;
  while ((m = TAG.exec(src))) {
    text(src.slice(last, m.index), last);
    last = TAG.lastIndex;
    const [, close, name, attrs, self] = m;
    const amp = /&(?!(?:amp|lt|gt|quot|#39|#\d+|#x[0-9a-f]+);)/i.exec(attrs);
    if (amp) problems.push(`bare '&' in the attributes of <${name}> at offset ${m.index}`);
    const inSvg = stack.includes("svg");
    if (close) {
      const top = stack.pop();
      if (top !== name) {
        problems.push(`</${name}> at offset ${m.index} closes <${top ?? "nothing"}>`);
        return problems;
      }
    } else if (self) {
      if (!inSvg && !VOID.has(name.toLowerCase()) && name !== "svg") problems.push(`self-closing <${name}/> outside svg at offset ${m.index}`);
    } else if (!(VOID.has(name.toLowerCase()) && !inSvg)) {
      stack.push(name);
    }
  }
  text(src.slice(last), last);
  if (stack.length) problems.push(`unclosed: ${stack.map((s) => `<${s}>`).join(" ")}`);
  return problems;
}

/** The <svg>...</svg> elements of a page (outermost). */
export function svgBlocks(html: string): string[] {
  return html.match(/<svg[\s>][\s\S]*?<\/svg>/g) ?? [];
}

/** Decode the entities esc() writes. */
export function unescape(s: string): string {
  return s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, "&");
}

/** attribute name -> value of one tag's attribute text. */
export function attrs(s: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of s.matchAll(/([\w:-]+)="([^"]*)"/g)) out[m[1]] = unescape(m[2]);
  return out;
}
