// A small line chart on a canvas: the last points of one series, its latest value printed.
const pointsKept = 90;

export class Chart {
  private readonly points: number[] = [];

  constructor(private readonly canvas: HTMLCanvasElement, private readonly title: string, private readonly format: (value: number) => string) {
    this.draw();
  }

  push(value: number): void {
    this.points.push(Number.isFinite(value) ? value : 0);
    if (this.points.length > pointsKept) this.points.shift();
    this.draw();
  }

  private draw(): void {
    const context = this.canvas.getContext('2d');
    if (context === null) return;
    const { width, height } = this.canvas;
    context.clearRect(0, 0, width, height);
    const max = Math.max(1e-9, ...this.points);
    context.strokeStyle = '#2f6fdf';
    context.lineWidth = 2;
    context.beginPath();
    this.points.forEach((value, i) => {
      const x = (i / (pointsKept - 1)) * width;
      const y = height - 4 - (value / max) * (height - 24);
      if (i === 0) context.moveTo(x, y);
      else context.lineTo(x, y);
    });
    context.stroke();
    context.fillStyle = '#222';
    context.font = '12px sans-serif';
    const last = this.points[this.points.length - 1];
    context.fillText(`${this.title}: ${last === undefined ? '…' : this.format(last)} (max ${this.format(this.points.length ? max : 0)})`, 4, 14);
    this.canvas.dataset['last'] = last === undefined ? '' : String(last);
  }
}
