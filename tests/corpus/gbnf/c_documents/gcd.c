int gcd(int a){int b = 12;while(a!=b){if(a>b){a = a-b;}else{b = b-a;}}// the greatest common divisor
return a;}int square(int x){/* a square, written
   over two lines */return x*x;}float mean(float total){int n = 4;return total/n;}int main(){int i = 0;int s = 0;for(i = 0; i<10; i = i+1){s = s+square(i);}print (s);while(s>100){s = s-gcd(s);}return ( s+1 );}