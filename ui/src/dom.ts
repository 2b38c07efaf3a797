// Building the page from data without innerHTML: every value is text, never markup.

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Readonly<Record<string, string>> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  element.append(...children);
  return element;
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`the page has no #${id}`);
  return element as T;
}

export function table(headings: readonly string[], rows: readonly HTMLTableRowElement[], empty: string): HTMLElement {
  if (rows.length === 0) return el('p', { class: 'empty' }, empty);
  return el('table', {}, el('thead', {}, el('tr', {}, ...headings.map((text) => el('th', {}, text)))), el('tbody', {}, ...rows));
}

export function row(attributes: Readonly<Record<string, string>>, ...cells: (Node | string)[]): HTMLTableRowElement {
  return el('tr', attributes, ...cells.map((cell) => el('td', {}, cell)));
}

/** Shows an API error in a view's place (a refused call is shown, never worked around). */
export function showError(target: HTMLElement, text: string): void {
  target.replaceChildren(el('p', { class: 'error', role: 'alert' }, text));
}

export function short(text: string, max = 80): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
