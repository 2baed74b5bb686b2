struct rect { int w; int h; };
int area(struct rect *r) { return r->w * r->h; }
