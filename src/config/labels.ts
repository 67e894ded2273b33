/**
 * The first label listed twice, with the index of its first place and of the repeat, or
 * undefined. Zones, lines and rules name classes by label and take the first place's class only,
 * so a model whose labels are ['helmet', 'head', 'helmet'] had a zone of helmets miss class 2
 * (0 alerts for it, "seen instead: helmet"), and a conveyor-defect rule `allowed: [helmet]`
 * count class 2 as a defect: a model's labels (a manifest's or its metadata's) must be unique.
 */
export function repeatedLabel(labels: readonly string[]): { label: string; first: number; again: number } | undefined {
  const seen = new Map<string, number>();
  for (let i = 0; i < labels.length; i++) {
    const first = seen.get(labels[i]);
    if (first !== undefined) return { label: labels[i], first, again: i };
    seen.set(labels[i], i);
  }
  return undefined;
}
